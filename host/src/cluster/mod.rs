//! Plugins delivered from the cluster: the `Plugin` resource, and OCI artifacts pinned by digest.
//!
//! - [`resource`]: the `Plugin` custom resource (`deploy/crd/plugin.yaml` is generated from it).
//! - [`oci`]: push and pull components in the WebAssembly OCI layout, verified by digest.
//! - [`blobs`]: pulled components on local disk by digest, so a restart need not pull.
//! - [`fetch`]: one Plugin's component onto local disk (pin checks, pull Secrets).
//! - [`push`]: `weir push PLUGIN.wasm REF [--sign KEY]`.
//! - [`signatures`]: cosign tag signatures beside an artifact, read and written; every
//!   signature of a digest gathered.
//! - [`referrers`]: Sigstore bundles referring to an artifact (OCI 1.1), read and written.
//! - [`verify`]: `weir verify REF`.
//! - [`status`]: what a Plugin's status says, written only when it changed.
//! - [`candidate_status`]: what it says of its candidate.
//! - [`cache_status`]: what a TenantPlugin's says of its tenant's cache cap.
//! - [`tenant_plugin`]: the namespaced `TenantPlugin` resource, a team's own plugin
//!   (`deploy/crd/tenantplugin.yaml` is generated from it).
//!
//! The host follows Plugin objects with `crate::hotload::ClusterLoader` (`weir run
//! --plugins-from-cluster`), the third plugin source beside the fixed list and the directory.

pub mod blobs;
pub mod cache_status;
pub mod candidate_status;
pub mod fetch;
pub mod oci;
pub mod push;
pub mod referrers;
pub mod resource;
pub mod signatures;
pub mod status;
pub mod tenant_plugin;
pub mod verdict;
pub mod verify;

pub use blobs::{Blobs, StoredComponent};
pub use oci::{Credentials, OciError, Pulled, Registry};
pub use push::{PushArgs, PushError};
pub use resource::{
    CandidateSource, ComponentSource, Condition, ConfigMapKey, ObjectReference, PluginResource,
    PluginSpec, PluginStatus, short_digest,
};
pub use tenant_plugin::{TenantPluginResource, TenantPluginSpec};
pub use verify::{VerifyArgs, VerifyError};
