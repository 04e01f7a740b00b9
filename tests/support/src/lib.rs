//! What the host's own tests (`host/tests`) and the end-to-end suite (`tests/`) share, kept in
//! one crate rather than compiled into each from the other's files:
//!
//! - [`guests`]: hand-written components in WebAssembly text, each doing one precise thing no
//!   compiled plugin would (sleep in the host, spin, answer an exact size, another contract);
//! - [`registry`]: a real OCI registry (CNCF Distribution) on loopback.

pub mod guests;
pub mod registry;
