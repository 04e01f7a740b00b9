//! What a plugin may declare: the host's admission of a plugin, before it watches or writes anything.
//!
//! A plugin's `describe()` is a claim. The host grants it (watches, RBAC, writes) only after
//! [`admit`] has checked it against a [`Policy`] the cluster admin controls and against what
//! the API server really serves ([`kinds`]), never against the plugin's own flags:
//!
//! - **Parent**: a custom resource defined by the plugin's own CRD (which must define exactly
//!   that kind, [`crd`]), or a custom resource of a non-Kubernetes group installed beforehand
//!   (`deploy/crd/`). A built-in kind (`v1/Secret`, `apps/v1/Deployment`) is refused unless
//!   the policy lists it in `builtinParents`: a plugin reconciling Secrets would see every
//!   Secret in the cluster. Cluster-scoped parents are refused (children live in the
//!   parent's namespace, so a cluster-scoped parent could only ever write cluster-wide).
//! - **Children**: only kinds the policy allows, only namespaced ones (by discovery), with the
//!   plural the API server serves them under, and never access-control, API-shape or
//!   admission kinds ([`kinds::is_never`]) whatever the policy says.
//! - **Names**: every group, version, kind and plural is a concrete name: no `*`, no
//!   subresource (`pods/exec`), nothing empty.
//! - **Secrets** stay write-only: observed Secrets reach the plugin without their data
//!   ([`crate::answer`]'s redaction), and a desired Secret must have a `type` the policy's
//!   `secretTypes` lists: [`Policy::validation`] hands that list to the judge of an answer
//!   ([`crate::answer`]), the one place it is checked.
//!
//! - **Scope** is widened for one plugin at a time, by its entry in the policy's `plugins:`
//!   map ([`Grant`]): a cluster-scoped parent, related objects (and a cluster-scoped
//!   parent's children) in the namespaces it names or selects by label, related Secrets with
//!   their data. [`Admitted::grant`] is what `weir plugins`, `weir rbac` and the admission log
//!   show; a plugin without an entry is refused exactly as before.
//!
//! - **Tenants**: a team's own plugin (a namespaced `TenantPlugin`) is admitted by
//!   [`admit_tenant`] for its namespace only, under that namespace's entry in the policy's
//!   `tenants:` map ([`Tenant`]): a parent kind the entry lists, nothing cluster-scoped, no
//!   widened grant.
//!
//! Kubewarden users will recognise the stance (deny by default, settings per deployment);
//! Metacontroller users, who grant a controller whatever RBAC they write by hand, get the same
//! power through `--policy FILE`, with the dangerous kinds fenced off for good.

mod admit;
mod crd;
#[cfg(test)]
mod grant_tests;
pub mod kinds;
mod refusal;
mod tenant;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use self::admit::{Admitted, admit, check_crd};
pub use self::kinds::{Discovered, Resolve, Resolved, Scope, WellKnown};
pub use self::refusal::PolicyRefusal;
pub use self::tenant::{
    DEFAULT_TENANT_RECONCILES, Tenant, TenantAdmitted, TenantRefusal, admit_tenant,
};
pub use crate::answer::{DEFAULT_SECRET_TYPES, Grant};
use crate::plugin::ResourceKind;

/// A kind by API group and name, version-free (as RBAC and admins think of it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupKind {
    /// API group; empty (or absent) for the core group.
    #[serde(default)]
    pub group: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
}

impl GroupKind {
    /// `group`/`kind`.
    pub fn new(group: &str, kind: &str) -> Self {
        Self {
            group: group.to_owned(),
            kind: kind.to_owned(),
        }
    }

    fn of(kind: &ResourceKind) -> Self {
        Self::new(&kind.group, &kind.kind)
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

/// The `plugins:` entry of every plugin without an entry of its own (member clusters only).
pub const EVERY_PLUGIN: &str = "*";

/// What the cluster admin lets plugins declare (`--policy FILE`, YAML); absent fields keep
/// their safe default, unknown fields are an error (a typo must not widen nothing silently).
///
/// ```yaml
/// # No Secrets at all, and allow one extra child kind.
/// children:
///   - {kind: ConfigMap}
///   - {group: apps, kind: Deployment}
///   - {group: cert-manager.io, kind: Certificate}
/// secretTypes: []
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Policy {
    /// Built-in kinds a plugin may reconcile as its parent. **Default: none.** A parent is
    /// watched cluster-wide and handed to the plugin whole, and the host patches its
    /// finalizers: a plugin parented on `Secret` reads every Secret in the cluster.
    pub builtin_parents: Vec<GroupKind>,
    /// Kinds a plugin may create as children. **Default: [`DEFAULT_CHILDREN`]**, the
    /// namespaced kinds an application is made of. Cluster-scoped kinds and
    /// [`kinds::is_never`] kinds are refused even when listed here.
    pub children: Vec<GroupKind>,
    /// The `type`s a desired Secret may have (a Secret without one is `Opaque`).
    /// **Default: [`DEFAULT_SECRET_TYPES`]**, which leaves out
    /// `kubernetes.io/service-account-token` (the token controller would fill it with a live
    /// token of any ServiceAccount of the namespace, for a workload the plugin writes to
    /// mount and send anywhere) and `bootstrap.kubernetes.io/token` (a node-joining
    /// credential). Empty: no Secret may be written.
    pub secret_types: Vec<String>,
    /// Kinds a plugin may read as related objects (contract 0.2.0: read-only, in the parent's
    /// namespace, or cluster-wide for a cluster-scoped kind). **Default: [`DEFAULT_CHILDREN`]
    /// and `Namespace`** (its labels). Secrets reach the plugin without their data.
    /// [`kinds::is_never`] kinds other than `Namespace` are refused even when listed here.
    pub related: Vec<GroupKind>,
    /// What is widened for each plugin, by the plugin's name ([`Grant`]). **Default: none**,
    /// and a plugin without an entry is served exactly as under the default policy. The entry
    /// `"*"` ([`EVERY_PLUGIN`]) is what every plugin without an entry of its own gets; it may
    /// only grant member clusters (`clusters`), never a namespace or Secret data.
    pub plugins: std::collections::BTreeMap<String, Grant>,
    /// The namespaces whose teams may serve their own plugins (`TenantPlugin` objects), by
    /// namespace name, and what each may serve there ([`Tenant`], [`admit_tenant`]).
    /// **Default: none**: no TenantPlugin is served.
    pub tenants: std::collections::BTreeMap<String, Tenant>,
}

/// The default child kinds, each with why (`group`, `kind`):
/// - `ConfigMap`, `Service`: configuration and an in-cluster address, what most apps need.
///   (A `LoadBalancer` or `externalIPs` Service is for the cluster's admission to judge.)
/// - `Secret`: write-only to the plugin (observed Secrets arrive without data), and only of
///   [`DEFAULT_SECRET_TYPES`].
/// - `ServiceAccount`: a workload's own identity; a new one holds no permissions, and a
///   plugin can neither bind roles nor mint its tokens.
/// - `PersistentVolumeClaim`: an app's storage.
/// - `apps` `Deployment`, `StatefulSet`; `batch` `Job`, `CronJob`: the workloads. (Not
///   `DaemonSet`, one Pod per node, infrastructure rather than application; nor bare Pods.)
/// - `policy` `PodDisruptionBudget`, `autoscaling` `HorizontalPodAutoscaler`: their upkeep.
/// - `networking.k8s.io` `Ingress`: exposing the app (narrow it where tenants share an
///   ingress controller and could claim each other's host names). Not `NetworkPolicy`:
///   policies add up, so one more can open traffic a namespace's default-deny closes.
pub const DEFAULT_CHILDREN: &[(&str, &str)] = &[
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("", "PersistentVolumeClaim"),
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("policy", "PodDisruptionBudget"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("networking.k8s.io", "Ingress"),
];

impl Default for Policy {
    fn default() -> Self {
        Self {
            builtin_parents: Vec::new(),
            children: DEFAULT_CHILDREN
                .iter()
                .map(|(g, k)| GroupKind::new(g, k))
                .collect(),
            secret_types: DEFAULT_SECRET_TYPES
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
            related: DEFAULT_CHILDREN
                .iter()
                .chain(&[("", "Namespace")])
                .map(|(g, k)| GroupKind::new(g, k))
                .collect(),
            plugins: std::collections::BTreeMap::new(),
            tenants: std::collections::BTreeMap::new(),
        }
    }
}

/// Why a policy file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("cannot read the policy {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a policy (bad YAML, an unknown field).
    #[error("the policy {} does not parse", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: crate::yaml::Error,
    },
    /// The policy allows a kind no plugin may ever declare.
    #[error("the policy {} allows {kind}, which no plugin may declare (access control, API shape, admission or Namespace)", path.display())]
    Never {
        /// The file.
        path: PathBuf,
        /// The kind.
        kind: GroupKind,
    },
    /// A plugin's entry names a namespace that is not a valid name, or has a selector that
    /// is not one.
    #[error("the policy {}: the entry of plugin {plugin} is invalid: {reason}", path.display())]
    Grant {
        /// The file.
        path: PathBuf,
        /// The plugin the entry is for.
        plugin: String,
        /// What is wrong.
        reason: String,
    },
    /// A namespace's `tenants:` entry is not valid (a bad name, a built-in kind).
    #[error("the policy {}: the tenant entry of namespace {namespace} is invalid: {reason}", path.display())]
    Tenant {
        /// The file.
        path: PathBuf,
        /// The namespace the entry is for.
        namespace: String,
        /// What is wrong.
        reason: String,
    },
}

impl Policy {
    /// Reads a policy from a YAML file.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.to_owned(),
            source,
        })?;
        let policy: Self = crate::yaml::from_str(&text).map_err(|source| PolicyError::Parse {
            path: path.to_owned(),
            source,
        })?;
        let never = policy
            .builtin_parents
            .iter()
            .chain(&policy.children)
            .find(|gk| kinds::is_never(&gk.group, &gk.kind));
        if let Some(kind) = never {
            return Err(PolicyError::Never {
                path: path.to_owned(),
                kind: kind.clone(),
            });
        }
        for (plugin, grant) in &policy.plugins {
            let only_clusters = Grant {
                clusters: grant.clusters.clone(),
                cluster_selector: grant.cluster_selector.clone(),
                ..Grant::default()
            };
            let beyond_clusters = (plugin == EVERY_PLUGIN && *grant != only_clusters).then(|| {
                "the entry of every plugin may only grant member clusters (`clusters`, `clusterSelector`)".to_owned()
            });
            let bad_name = grant
                .namespaces
                .iter()
                .find(|n| !crate::answer::is_valid_name(n))
                .map(|n| format!("{n:?} is not a namespace name"));
            let bad_selector = (grant.namespace_selector.iter())
                .chain(&grant.cluster_selector)
                .find_map(|s| s.problem());
            let bad_cluster = grant
                .clusters
                .iter()
                .find(|c| *c != crate::answer::ANY_CLUSTER && !crate::answer::is_valid_name(c))
                .map(|c| format!("{c:?} is not a cluster name (nor \"*\", every member)"));
            let problem = beyond_clusters
                .or(bad_name)
                .or(bad_selector)
                .or(bad_cluster);
            if let Some(reason) = problem {
                return Err(PolicyError::Grant {
                    path: path.to_owned(),
                    plugin: plugin.clone(),
                    reason,
                });
            }
        }
        for (namespace, tenant) in &policy.tenants {
            if let Some(reason) = tenant.problem(namespace) {
                return Err(PolicyError::Tenant {
                    path: path.to_owned(),
                    namespace: namespace.clone(),
                    reason,
                });
            }
        }
        Ok(policy)
    }

    /// The policy in `path`, or the default one.
    pub fn load_or_default(path: Option<&Path>) -> Result<Self, PolicyError> {
        path.map_or_else(|| Ok(Self::default()), Self::load)
    }

    /// What the judge of an answer ([`crate::answer`]) may let through under this policy:
    /// the one place a desired Secret's `type` is checked against `secret_types`.
    pub fn validation(&self) -> crate::answer::ValidationPolicy {
        crate::answer::ValidationPolicy {
            secret_types: self.secret_types.clone(),
            grants: std::sync::Arc::new(self.plugins.clone()),
            every_plugin: self.plugins.get(EVERY_PLUGIN).cloned(),
        }
    }

    /// The policy's entry for the plugin named `plugin`: its own, or the entry of every plugin
    /// ([`EVERY_PLUGIN`]).
    pub fn grant_for(&self, plugin: &str) -> Option<&Grant> {
        self.plugins
            .get(plugin)
            .or_else(|| self.plugins.get(EVERY_PLUGIN))
    }
}
