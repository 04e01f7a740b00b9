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
//! Kubewarden users will recognise the stance (deny by default, settings per deployment);
//! Metacontroller users, who grant a controller whatever RBAC they write by hand, get the same
//! power through `--policy FILE`, with the dangerous kinds fenced off for good.

mod crd;
#[cfg(test)]
mod grant_tests;
pub mod kinds;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use self::kinds::{Discovered, Resolve, Resolved, Scope, WellKnown};
pub use crate::answer::{DEFAULT_SECRET_TYPES, Grant};
use crate::plugin::{PluginInfo, ResourceKind};

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
    /// and a plugin without an entry is served exactly as under the default policy.
    pub plugins: std::collections::BTreeMap<String, Grant>,
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
            let bad_name = grant
                .namespaces
                .iter()
                .find(|n| !crate::answer::is_valid_name(n))
                .map(|n| format!("{n:?} is not a namespace name"));
            let bad_selector = grant.namespace_selector.as_ref().and_then(|s| s.problem());
            if let Some(reason) = bad_name.or(bad_selector) {
                return Err(PolicyError::Grant {
                    path: path.to_owned(),
                    plugin: plugin.clone(),
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
        }
    }
}

/// Why a plugin (or one of its answers) is refused. Every message names the plugin and the kind.
#[derive(Debug, thiserror::Error)]
pub enum PolicyRefusal {
    /// A declared group, version, kind or plural is not one concrete name (`*`, a
    /// subresource such as `pods/exec`, an empty or malformed name).
    #[error(
        "plugin {plugin}: {role} {field} {value:?} is not a concrete name (no wildcards, subresources or empty names)"
    )]
    NotConcrete {
        /// The plugin (`name@version`).
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// `group`, `version`, `kind` or `plural`.
        field: &'static str,
        /// What the plugin declared.
        value: String,
    },
    /// A kind no plugin may declare, whatever the policy (see [`kinds::is_never`]).
    #[error(
        "plugin {plugin}: {role} {kind} is never allowed (access control, API shape, admission or Namespace)"
    )]
    Never {
        /// The plugin.
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// The kind.
        kind: String,
    },
    /// The parent is a built-in kind the policy does not list in `builtinParents`.
    #[error(
        "plugin {plugin}: parent {kind} is a built-in kind; a plugin reconciles a custom resource of its own unless the policy's builtinParents lists it"
    )]
    BuiltinParent {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// The plugin's CRD is not YAML or JSON (or holds more than one document).
    #[error("plugin {plugin}: its CRD does not parse as one YAML or JSON document")]
    CrdParse {
        /// The plugin.
        plugin: String,
        /// The parser's error.
        #[source]
        source: crate::yaml::Error,
    },
    /// The plugin's CRD does not define exactly its parent kind.
    #[error("plugin {plugin}: its CRD does not define exactly its parent {kind}: {reason}")]
    CrdMismatch {
        /// The plugin.
        plugin: String,
        /// The declared parent.
        kind: String,
        /// What differs.
        reason: String,
    },
    /// The parent is served cluster-wide; children live in the parent's namespace.
    #[error("plugin {plugin}: parent {kind} is cluster-scoped; only namespaced parents are served")]
    ClusterScopedParent {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// A child kind the policy's `children` does not list.
    #[error("plugin {plugin}: child {kind} is not allowed by the policy (its `children` list)")]
    ChildNotAllowed {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// A related kind the policy's `related` does not list.
    #[error(
        "plugin {plugin}: related kind {kind} is not allowed by the policy (its `related` list)"
    )]
    RelatedNotAllowed {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// A child kind served cluster-wide (by discovery, whatever the plugin says).
    #[error("plugin {plugin}: child {kind} is cluster-scoped; children must be namespaced")]
    ClusterScopedChild {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// The API server does not serve this group/version/kind.
    #[error("plugin {plugin}: {role} {kind} is not served by the API server")]
    NotServed {
        /// The plugin.
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// The kind.
        kind: String,
    },
    /// Offline, a child kind outside the table of well-known kinds cannot be checked.
    #[error(
        "plugin {plugin}: child {kind} is not a well-known kind, so its scope cannot be checked without a cluster"
    )]
    Unverifiable {
        /// The plugin.
        plugin: String,
        /// The kind.
        kind: String,
    },
    /// The declared plural or scope differs from what the API server serves.
    #[error("plugin {plugin}: {role} {kind} is declared as {declared} but served as {served}")]
    Misdeclared {
        /// The plugin.
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// The kind.
        kind: String,
        /// What the plugin said (plural, scope).
        declared: String,
        /// What the API server serves.
        served: String,
    },
}

/// A plugin the policy admitted: the only way to a ClusterRole or a controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admitted {
    info: PluginInfo,
    parent_crd: bool,
    grant: Option<Grant>,
}

impl Admitted {
    /// What the plugin declared, every kind checked.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// Whether the parent kind is defined by the CRD the plugin ships.
    pub fn parent_from_own_crd(&self) -> bool {
        self.parent_crd
    }

    /// What the policy's entry for the plugin widens, if it widens anything.
    pub fn grant(&self) -> Option<&Grant> {
        self.grant.as_ref()
    }

    /// The child and related kinds worth a warning wherever they are granted (Secrets: the host
    /// watches every Secret of the cluster to serve them, even if the plugin only sees its own, redacted).
    pub fn sensitive_children(&self) -> impl Iterator<Item = &ResourceKind> {
        self.info
            .children
            .iter()
            .chain(&self.info.related)
            .filter(|k| k.group.is_empty() && k.kind == "Secret")
    }
}

/// Admits `info` under `policy`, resolving kinds with `kinds` (the cluster's discovery, or
/// [`WellKnown`] offline). The first refusal wins.
pub fn admit(
    policy: &Policy,
    info: &PluginInfo,
    kinds: &dyn Resolve,
) -> Result<Admitted, PolicyRefusal> {
    concrete(info, "parent", &info.parent)?;
    for child in &info.children {
        concrete(info, "child", child)?;
    }
    for related in &info.related {
        concrete(info, "related", related)?;
    }
    let parent_crd = admit_parent(policy, info, kinds)?;
    for child in &info.children {
        admit_child(policy, info, child, kinds)?;
    }
    for related in &info.related {
        admit_related(policy, info, related, kinds)?;
    }
    Ok(Admitted {
        info: info.clone(),
        parent_crd,
        grant: grant_of(policy, info).cloned(),
    })
}

/// Checks that the CRD a plugin ships defines exactly its parent kind (for `weir dev`, which
/// installs it). `Ok(false)`: the plugin ships none.
pub fn check_crd(info: &PluginInfo) -> Result<bool, PolicyRefusal> {
    match &info.crd {
        Some(text) => crd::check(info, text).map(|_| true),
        None => Ok(false),
    }
}

/// The policy's entry for the plugin, if it widens anything.
fn grant_of<'a>(policy: &'a Policy, info: &PluginInfo) -> Option<&'a Grant> {
    policy.plugins.get(&info.name).filter(|g| g.widens())
}

fn admit_parent(
    policy: &Policy,
    info: &PluginInfo,
    kinds: &dyn Resolve,
) -> Result<bool, PolicyRefusal> {
    let parent = &info.parent;
    if kinds::is_never(&parent.group, &parent.kind) {
        return Err(PolicyRefusal::Never {
            plugin: label(info),
            role: "parent",
            kind: describe(parent),
        });
    }
    let own_crd = match &info.crd {
        Some(text) => {
            crd::check(info, text)?;
            true
        }
        None => false,
    };
    let builtin = !own_crd && kinds::is_builtin_group(&parent.group);
    if builtin && !policy.builtin_parents.contains(&GroupKind::of(parent)) {
        return Err(PolicyRefusal::BuiltinParent {
            plugin: label(info),
            kind: describe(parent),
        });
    }
    match kinds.resolve(parent) {
        Resolved::Served { plural, scope } => served_as(info, "parent", parent, &plural, scope)?,
        // A CRD not installed yet (by `weir dev`, or `deploy/crd/` applied alongside the host).
        Resolved::NotServed if !builtin => {}
        Resolved::NotServed => {
            return Err(PolicyRefusal::NotServed {
                plugin: label(info),
                role: "parent",
                kind: describe(parent),
            });
        }
        Resolved::Unknown => {}
    }
    // Only the plugin's own kind: a cluster-scoped kind someone else defined is not the
    // plugin's to reconcile, whatever the entry says.
    let granted = own_crd && grant_of(policy, info).is_some_and(|g| g.cluster_scoped_parent);
    if !parent.namespaced && !granted {
        return Err(PolicyRefusal::ClusterScopedParent {
            plugin: label(info),
            kind: describe(parent),
        });
    }
    Ok(own_crd)
}

fn admit_child(
    policy: &Policy,
    info: &PluginInfo,
    child: &ResourceKind,
    kinds: &dyn Resolve,
) -> Result<(), PolicyRefusal> {
    let kind = || describe(child);
    if kinds::is_never(&child.group, &child.kind) {
        return Err(PolicyRefusal::Never {
            plugin: label(info),
            role: "child",
            kind: kind(),
        });
    }
    if !policy.children.contains(&GroupKind::of(child)) {
        return Err(PolicyRefusal::ChildNotAllowed {
            plugin: label(info),
            kind: kind(),
        });
    }
    match kinds.resolve(child) {
        Resolved::Served {
            scope: Scope::Cluster,
            ..
        } => Err(PolicyRefusal::ClusterScopedChild {
            plugin: label(info),
            kind: kind(),
        }),
        Resolved::Served { plural, scope } => served_as(info, "child", child, &plural, scope),
        Resolved::NotServed => Err(PolicyRefusal::NotServed {
            plugin: label(info),
            role: "child",
            kind: kind(),
        }),
        Resolved::Unknown => Err(PolicyRefusal::Unverifiable {
            plugin: label(info),
            kind: kind(),
        }),
    }
}

/// A related kind is read, never written: allowed by the policy's `related` list, never an
/// access-control, API-shape or admission kind (reading `Namespace` is fine), and declared at
/// the scope the API server serves it at.
fn admit_related(
    policy: &Policy,
    info: &PluginInfo,
    related: &ResourceKind,
    kinds: &dyn Resolve,
) -> Result<(), PolicyRefusal> {
    let kind = || describe(related);
    let namespace = related.group.is_empty() && related.kind == "Namespace";
    if kinds::is_never(&related.group, &related.kind) && !namespace {
        return Err(PolicyRefusal::Never {
            plugin: label(info),
            role: "related",
            kind: kind(),
        });
    }
    if !policy.related.contains(&GroupKind::of(related)) {
        return Err(PolicyRefusal::RelatedNotAllowed {
            plugin: label(info),
            kind: kind(),
        });
    }
    match kinds.resolve(related) {
        Resolved::Served { plural, scope } => served_as(info, "related", related, &plural, scope),
        Resolved::NotServed => Err(PolicyRefusal::NotServed {
            plugin: label(info),
            role: "related",
            kind: kind(),
        }),
        Resolved::Unknown => Err(PolicyRefusal::Unverifiable {
            plugin: label(info),
            kind: kind(),
        }),
    }
}

/// The declared plural and scope must be what the API server serves: the host watches and
/// RBAC grants by plural, and lists cluster-wide or per namespace by scope.
fn served_as(
    info: &PluginInfo,
    role: &'static str,
    kind: &ResourceKind,
    plural: &str,
    scope: Scope,
) -> Result<(), PolicyRefusal> {
    let served_namespaced = scope == Scope::Namespaced;
    if kind.plural == plural && kind.namespaced == served_namespaced {
        return Ok(());
    }
    let shape = |plural: &str, namespaced: bool| {
        format!(
            "{plural} ({})",
            if namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        )
    };
    Err(PolicyRefusal::Misdeclared {
        plugin: label(info),
        role,
        kind: describe(kind),
        declared: shape(&kind.plural, kind.namespaced),
        served: shape(plural, served_namespaced),
    })
}

/// Every name must be a concrete Kubernetes name: a DNS subdomain group (or the core group),
/// a lowercase alphanumeric version, an alphanumeric kind and a DNS-label plural.
fn concrete(
    info: &PluginInfo,
    role: &'static str,
    kind: &ResourceKind,
) -> Result<(), PolicyRefusal> {
    let label_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
    };
    let checks: [(&'static str, &str, bool); 4] = [
        (
            "group",
            &kind.group,
            kind.group.is_empty()
                || (kind.group.len() <= 253 && kind.group.split('.').all(label_ok)),
        ),
        (
            "version",
            &kind.version,
            !kind.version.is_empty()
                && kind
                    .version
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
        ),
        (
            "kind",
            &kind.kind,
            kind.kind
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic())
                && kind.kind.bytes().all(|b| b.is_ascii_alphanumeric()),
        ),
        ("plural", &kind.plural, label_ok(&kind.plural)),
    ];
    match checks.into_iter().find(|(_, _, ok)| !ok) {
        None => Ok(()),
        Some((field, value, _)) => Err(PolicyRefusal::NotConcrete {
            plugin: label(info),
            role,
            field,
            value: value.to_owned(),
        }),
    }
}

/// `name@version`, as the plugin's label elsewhere in the host.
fn label(info: &PluginInfo) -> String {
    format!("{}@{}", info.name, info.version)
}

/// `apps/v1 Deployment`.
fn describe(kind: &ResourceKind) -> String {
    format!("{} {}", kind.api_version(), kind.kind)
}
