//! Plugin signatures, checked offline with public keys before anything loads.
//!
//! - [`policy`]: which keys must have signed (Kubewarden's `allOf` / `anyOf` shape) and each
//!   source's level (`enforce` | `audit`; the directory may be `trusted`).
//! - [`keys`]: ECDSA P-256 keys and signatures, as cosign's key-based signing makes them.
//! - [`simple_signing`]: the payload a cosign tag signature covers, naming the manifest digest.
//! - [`bundle`]: Sigstore bundles (cosign v3's default), a DSSE envelope of an in-toto
//!   statement naming the digest; read, and written by `weir push --sign KEY --bundle`.
//! - [`found`]: a signature found, in either format: what its key signed and what it vouches for.
//! - [`verify`]: the signatures found for a digest held against the policy: a verdict that
//!   names the keys that verified it, or why none did.
//! - [`blob`]: a file's detached signatures (`FILE.sig`, as `cosign sign-blob --key` writes
//!   them) held against the same policy, for the plugins directory.
//! - [`sign`]: `weir sign --key KEY FILE`, which writes `FILE.sig`.
//! - [`cache`]: verdicts kept beside the stored components, by digest and policy.
//!
//! Where the signatures come from is the source's business: the cluster source reads cosign's
//! `sha256-<hex>.sig` tag beside the artifact and the bundles that refer to it (OCI 1.1
//! referrers, or their `sha256-<hex>` tag where the registry has no referrers API), all for
//! the one verification (`crate::cluster::signatures`, `crate::cluster::referrers`); the
//! directory source reads `FILE.sig` beside each file and checks it over the very bytes it then
//! compiles (`crate::hotload`). Nothing here fetches a trust root or talks to a transparency
//! log: the keys in the policy are the trust.

pub mod blob;
pub mod bundle;
pub mod cache;
pub mod found;
pub mod keys;
pub mod policy;
pub mod sign;
pub mod simple_signing;
pub mod verify;

#[cfg(test)]
mod interop_tests;

pub use cache::VerdictCache;
pub use keys::{KeyError, PrivateKey, PublicKey};
pub use policy::{DirectoryLevel, Level, Levels, Policy, PolicyError};
pub use sign::{SignArgs, SignError};
pub use verify::{Found, Verdict, verify};
