//! Plugin signatures, checked offline with public keys before anything loads.
//!
//! - [`policy`]: which keys must have signed (Kubewarden's `allOf` / `anyOf` shape) and each
//!   source's level (`enforce` | `audit`; the directory may be `trusted`).
//! - [`keys`]: ECDSA P-256 keys and signatures, as cosign's key-based signing makes them.
//! - [`simple_signing`]: the payload a cosign signature covers, naming the manifest digest.
//! - [`verify`]: the signatures found for a digest held against the policy: a verdict that
//!   names the keys that verified it, or why none did.
//! - [`blob`]: a file's detached signatures (`FILE.sig`, as `cosign sign-blob --key` writes
//!   them) held against the same policy, for the plugins directory.
//! - [`sign`]: `weir sign --key KEY FILE`, which writes `FILE.sig`.
//! - [`cache`]: verdicts kept beside the stored components, by digest and policy.
//!
//! Where the signatures come from is the source's business: the cluster source reads cosign's
//! `sha256-<hex>.sig` tag beside the artifact (`crate::cluster::signatures`); the directory
//! source reads `FILE.sig` beside each file and checks it over the very bytes it then compiles
//! (`crate::hotload`). Nothing here fetches a trust root or talks to a transparency log: the
//! keys in the policy are the trust.

pub mod blob;
pub mod cache;
pub mod keys;
pub mod policy;
pub mod sign;
pub mod simple_signing;
pub mod verify;

pub use cache::VerdictCache;
pub use keys::{KeyError, PrivateKey, PublicKey};
pub use policy::{DirectoryLevel, Level, Levels, Policy, PolicyError};
pub use sign::{SignArgs, SignError};
pub use verify::{Found, Verdict, verify};
