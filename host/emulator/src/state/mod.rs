//! A running emulator's state beside the store: its settings, what it logs and saves, who may
//! call it, and [`shared::Shared`], which holds all of it with the store under its lock.
//!
//! In reading order: `faults` (fault-injection rules and their middleware), `config` (the public
//! settings and the record of one request), `request_log` (the last requests served, in a ring
//! read from a cursor), `persist` (the store saved to a state file and loaded back: objects, CRDs
//! and the resourceVersion counter, not the watch history), `auth` (the generated CA and TLS
//! listener, the admin and ServiceAccount tokens, and RBAC), `shared` (the store under its lock,
//! the request log, and the signal that ends every watch).

pub mod faults;
pub mod config;
pub mod request_log;
pub mod persist;
pub mod auth;
pub mod shared;
