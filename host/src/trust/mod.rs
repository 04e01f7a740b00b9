//! Plugin signatures, checked offline with public keys before anything loads.
//!
//! - [`policy`]: which keys must have signed (Kubewarden's `allOf` / `anyOf` shape) and each
//!   source's level (`enforce` | `audit`).
//! - [`keys`]: ECDSA P-256 keys and signatures, as cosign's key-based signing makes them.
//! - [`simple_signing`]: the payload a cosign signature covers, naming the manifest digest.
//! - [`verify`]: the signatures found for a digest held against the policy: a verdict that
//!   names the keys that verified it, or why none did.
//! - [`cache`]: verdicts kept beside the stored components, by digest and policy.
//!
//! Where the signatures come from is the source's business: the cluster source reads cosign's
//! `sha256-<hex>.sig` tag beside the artifact (`crate::cluster::signatures`). Nothing here
//! fetches a trust root or talks to a transparency log: the keys in the policy are the trust.

pub mod cache;
pub mod keys;
pub mod policy;
pub mod simple_signing;
pub mod verify;

pub use cache::VerdictCache;
pub use keys::{KeyError, PrivateKey, PublicKey};
pub use policy::{Level, Levels, Policy, PolicyError};
pub use verify::{Found, Verdict, verify};
