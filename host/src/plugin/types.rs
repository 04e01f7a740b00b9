//! The host's view of the WIT contract (every version of `wit/`), in plain Rust.
//!
//! These types are what the rest of the host sees; the generated bindings stay
//! private to the sandbox so that a WIT change touches one module.

use std::time::Duration;

use kube::discovery::ApiResource;
use serde::{Deserialize, Serialize};

use super::placement::Clusters;

/// A Kubernetes resource type as a plugin declares it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceKind {
    /// API group; empty for the core group.
    pub group: String,
    /// Version within the group.
    pub version: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Plural used in URLs, e.g. `deployments`.
    pub plural: String,
    /// Whether objects of this kind live in a namespace.
    pub namespaced: bool,
}

impl ResourceKind {
    /// A kind of version `v1` in `group`, for tests.
    #[cfg(test)]
    pub(crate) fn of_v1(group: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        }
    }

    /// `group/version`, or just `version` for the core group, as in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kube-rs description of this kind, for `Api<DynamicObject>`.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }
}

/// What a plugin says about itself (`describe`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginInfo {
    /// Plugin name; the field manager is `weir/<name>`.
    pub name: String,
    /// Plugin version (semver).
    pub version: String,
    /// The kind this plugin reconciles.
    pub parent: ResourceKind,
    /// The kinds this plugin may create.
    pub children: Vec<ResourceKind>,
    /// The kinds this plugin may read beyond its children (contract 0.2.0; none for 0.1.0).
    #[serde(default)]
    pub related: Vec<ResourceKind>,
    /// Finalizer the host holds on each parent, if the plugin needs cleanup.
    pub finalizer: Option<String>,
    /// The parent kind's CRD manifest (YAML or JSON), if the plugin ships it.
    pub crd: Option<String>,
}

impl PluginInfo {
    /// `name@version`: how the host names the plugin in errors, logs and activity.
    pub fn label(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

/// One reconcile's input: the parent and its children, as cached, as JSON text.
#[derive(Clone, Debug, Default)]
pub struct ReconcileRequest {
    /// The parent object (JSON).
    pub parent: String,
    /// The children the parent controls (each a JSON object).
    pub children: Vec<String>,
    /// The selected related objects that exist (each a JSON object; Secrets redacted).
    pub related: Vec<String>,
    /// The cluster of the parent and of each object (contract 0.4.0; default: all local).
    pub clusters: Clusters,
}

/// When to reconcile again, apart from watch events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Converged; wait for a change or the resync.
    Done,
    /// As soon as possible (still subject to the hot-loop guard).
    Now,
    /// After this long.
    After(Duration),
}

/// One reconcile's answer, already parsed and size-checked by the sandbox.
#[derive(Clone, Debug, PartialEq)]
pub struct ReconcileResponse {
    /// Desired children (JSON objects with apiVersion, kind, metadata.name).
    pub children: Vec<serde_json::Value>,
    /// The cluster each child names, in `children`'s order (contract 0.4.0); `None` or left
    /// out: the parent's cluster. Older plugins name none.
    pub clusters: Vec<Option<String>>,
    /// Desired status of the parent (a JSON object), if any.
    pub status: Option<serde_json::Value>,
    /// When to look again.
    pub requeue: Requeue,
}

/// The input of one cleanup step.
#[derive(Clone, Debug, Default)]
pub struct FinalizeRequest {
    /// The parent object being deleted (JSON).
    pub parent: String,
    /// The children the parent controls (each a JSON object).
    pub children: Vec<String>,
    /// The selected related objects that exist (each a JSON object; Secrets redacted).
    pub related: Vec<String>,
    /// The finalizer the host holds for this plugin.
    pub finalizer: String,
    /// The cluster of the parent and of each object (contract 0.4.0; default: all local).
    pub clusters: Clusters,
}

/// One cleanup step's answer, already parsed and size-checked by the sandbox.
///
/// Contract 0.3.0 lets a cleanup step act: its children and status are judged, applied and
/// pruned like a reconcile's while the finalizer is held. An older plugin's answer is one of
/// [`FinalizeResponse::complete`] and [`FinalizeResponse::again_after`], which leave both alone.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalizeResponse {
    /// The children the parent should have during cleanup (JSON objects, as in
    /// [`ReconcileResponse::children`]); `None` leaves them as they are.
    pub children: Option<Vec<serde_json::Value>>,
    /// The cluster each child names, as in [`ReconcileResponse::clusters`].
    pub clusters: Vec<Option<String>>,
    /// Desired status of the parent (a JSON object), if any.
    pub status: Option<serde_json::Value>,
    /// Cleanup done: the finalizer is removed once the rest is applied.
    pub finalized: bool,
    /// When to ask again while not finalized.
    pub requeue: Requeue,
}

impl FinalizeResponse {
    /// Cleanup done, nothing to apply (the 0.1.0 and 0.2.0 `complete`).
    pub const fn complete() -> Self {
        Self {
            children: None,
            clusters: Vec::new(),
            status: None,
            finalized: true,
            requeue: Requeue::Done,
        }
    }

    /// Not yet, ask again after `delay`, nothing to apply (the 0.1.0 and 0.2.0 `again-after`).
    pub const fn again_after(delay: Duration) -> Self {
        Self {
            children: None,
            clusters: Vec::new(),
            status: None,
            finalized: false,
            requeue: Requeue::After(delay),
        }
    }

    /// Whether the answer asks the host to write anything before the finalizer goes.
    pub fn acts(&self) -> bool {
        self.children.is_some() || self.status.is_some()
    }
}

/// Whether retrying a failed reconcile can help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// Retry with backoff.
    Transient,
    /// Report and wait for the parent to change.
    Permanent,
}

/// The version of `weir:reconciler` a component was built against (`wit/README.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Contract {
    /// `weir:reconciler@0.1.0`: no related objects.
    #[serde(rename = "0.1.0")]
    V0_1,
    /// `weir:reconciler@0.2.0`: related kinds and `select-related`.
    #[serde(rename = "0.2.0")]
    V0_2,
    /// `weir:reconciler@0.3.0`: a `finalize` answer carries children and status.
    #[serde(rename = "0.3.0")]
    V0_3,
    /// `weir:reconciler@0.4.0`: every object crosses with the name of its cluster.
    #[serde(rename = "0.4.0")]
    V0_4,
}

impl Contract {
    /// Every version this host loads, oldest first.
    pub const ALL: [Contract; 4] = [
        Contract::V0_1,
        Contract::V0_2,
        Contract::V0_3,
        Contract::V0_4,
    ];

    /// `major.minor.patch`.
    pub fn version(self) -> &'static str {
        match self {
            Contract::V0_1 => "0.1.0",
            Contract::V0_2 => "0.2.0",
            Contract::V0_3 => "0.3.0",
            Contract::V0_4 => "0.4.0",
        }
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "weir:reconciler@{}", self.version())
    }
}
