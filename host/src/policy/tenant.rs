//! What a team's own plugin (a namespaced `TenantPlugin`) may declare: the policy's `tenants:`
//! entry for its namespace, and the host's admission of it, never its own claims.
//!
//! A tenant plugin is admitted by [`admit_tenant`] only if, beyond what [`super::admit`] asks of
//! every plugin under the policy's defaults:
//! - its namespace has an entry in the policy's `tenants:` map (the cluster admin gave the team
//!   that namespace);
//! - its parent is a kind the entry lists, a custom resource whose CRD the cluster admin
//!   installed beforehand (served namespaced by discovery; the plugin's own CRD is never
//!   installed and never makes a kind its own);
//! - no kind it declares is cluster-scoped (parent, child or related: not even `Namespace`);
//! - it gets no widened grant: a name the policy's `plugins:` map widens is refused, and the
//!   only widening a tenant has is its entry's `secretData` (related Secrets of its own
//!   namespace with their data).
//!
//! Everything it touches is then held to its namespace by the host: its watches are in that
//! namespace only and its controller's gate admits no parent elsewhere (`crate::tenant`); the
//! judge keeps children in the parent's namespace, and related objects stay there too, since
//! the tenant has no grant naming others.

use serde::{Deserialize, Serialize};

use super::kinds::{Resolve, Resolved, Scope, is_builtin_group, is_never};
use super::refusal::describe;
use super::{Admitted, GroupKind, Policy, PolicyRefusal, admit};
use crate::answer::{Grant, ValidationPolicy};
use crate::plugin::PluginInfo;

/// One team's namespace, as the cluster admin's policy gives it (an entry of `tenants:`, keyed
/// by the namespace's name). Absent fields give nothing.
///
/// ```yaml
/// tenants:
///   team-a:
///     kinds: [{group: example.com, kind: Blog}]
///     secretData: false
///     maxConcurrentReconciles: 4
///     maxCachedObjects: 5000
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Tenant {
    /// The parent kinds the namespace's TenantPlugins may reconcile there: custom resources
    /// whose CRDs the cluster admin installed (a built-in kind is refused when the policy loads).
    pub kinds: Vec<GroupKind>,
    /// Related Secrets of the namespace reach its plugins with their data (by default without).
    pub secret_data: bool,
    /// Reconciles of the namespace's plugins in flight at once (and plugin calls), its own
    /// slots beside the host's: a tenant's storm waits for its own. **Default:
    /// [`DEFAULT_TENANT_RECONCILES`].**
    pub max_concurrent_reconciles: Option<usize>,
    /// Objects the namespace's informers may cache, all its plugins' kinds together (parents,
    /// children, related objects): beyond it, a new object is not cached, and no reconcile
    /// reads a kind left out until objects are deleted (`crate::runtime::cap`). At least 1.
    /// **Default: no cap.**
    pub max_cached_objects: Option<usize>,
}

/// A tenant namespace's reconciles in flight at once, unless its entry says otherwise.
pub const DEFAULT_TENANT_RECONCILES: usize = 4;

impl Tenant {
    /// The namespace's reconciles in flight at once (at least one).
    pub fn reconciles(&self) -> usize {
        self.max_concurrent_reconciles
            .unwrap_or(DEFAULT_TENANT_RECONCILES)
            .max(1)
    }

    /// What the judge of a tenant plugin's answers allows: the policy's Secret types, no grant
    /// from the `plugins:` map whatever the plugin is called, and only this entry's Secret data.
    pub fn validation(&self, policy: &Policy) -> ValidationPolicy {
        let every = Grant {
            secret_data: self.secret_data,
            ..Grant::default()
        };
        ValidationPolicy {
            secret_types: policy.secret_types.clone(),
            grants: std::sync::Arc::default(),
            every_plugin: every.widens().then_some(every),
        }
    }

    /// Why this entry (for namespace `namespace`) is not one a policy may hold, if it is not:
    /// a kind of Kubernetes' own API, or one no plugin may ever declare.
    pub(super) fn problem(&self, namespace: &str) -> Option<String> {
        if !crate::answer::is_valid_name(namespace) {
            return Some(format!("{namespace:?} is not a namespace name"));
        }
        if self.max_cached_objects == Some(0) {
            return Some(
                "maxCachedObjects: 0 would cache nothing, so nothing could be reconciled; leave it out for no cap".to_owned(),
            );
        }
        self.kinds
            .iter()
            .find(|k| is_builtin_group(&k.group) || is_never(&k.group, &k.kind))
            .map(|k| {
                format!(
                    "{k} is a kind of Kubernetes' own API; a tenant reconciles custom resources"
                )
            })
    }
}

/// Why a tenant plugin is refused, beyond the refusals of every plugin ([`PolicyRefusal`]).
#[derive(Debug, thiserror::Error)]
pub enum TenantRefusal {
    /// The namespace has no entry in the policy's `tenants:` map.
    #[error(
        "TenantPlugin in namespace {namespace}: the namespace is not a tenant's (the policy's `tenants:` has no entry for it)"
    )]
    NotATenant {
        /// The namespace.
        namespace: String,
    },
    /// The parent kind is not one the namespace's entry lists.
    #[error(
        "plugin {plugin}: parent {kind} is not granted to namespace {namespace} (its `tenants:` entry lists {granted})"
    )]
    KindNotGranted {
        /// The plugin (`name@version`).
        plugin: String,
        /// The namespace.
        namespace: String,
        /// The parent kind.
        kind: String,
        /// The kinds the entry lists (`none` if none).
        granted: String,
    },
    /// The parent's CRD is not installed: a tenant never installs one.
    #[error(
        "plugin {plugin}: parent {kind} is not served; the cluster admin installs its CRD before a tenant may serve it"
    )]
    ParentNotInstalled {
        /// The plugin.
        plugin: String,
        /// The parent kind.
        kind: String,
    },
    /// A kind served cluster-wide: a tenant's plugin reaches into its own namespace only.
    #[error(
        "plugin {plugin}: {role} {kind} is cluster-scoped; a tenant plugin reaches only its own namespace"
    )]
    ClusterScoped {
        /// The plugin.
        plugin: String,
        /// `parent`, `child` or `related`.
        role: &'static str,
        /// The kind.
        kind: String,
    },
    /// The plugin's name has an entry in the policy's `plugins:` map, which is for the cluster
    /// admin's own plugins.
    #[error(
        "plugin {plugin}: the policy's `plugins:` entry {name:?} widens a cluster Plugin's scope; a tenant plugin gets no widened grant (rename it)"
    )]
    WidenedGrant {
        /// The plugin.
        plugin: String,
        /// Its name, the entry's key.
        name: String,
    },
    /// A refusal of every plugin.
    #[error(transparent)]
    Policy(#[from] PolicyRefusal),
}

/// A tenant plugin admitted for its namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantAdmitted {
    /// What the rules of every plugin admitted (with no grant).
    pub admitted: Admitted,
    /// The namespace it serves.
    pub namespace: String,
}

/// Admits `info` as a plugin of namespace `namespace` under `policy`, resolving kinds with
/// `kinds`; the first refusal wins. See the module docs for the rules.
pub fn admit_tenant(
    policy: &Policy,
    namespace: &str,
    info: &PluginInfo,
    kinds: &dyn Resolve,
) -> Result<TenantAdmitted, TenantRefusal> {
    let Some(tenant) = policy.tenants.get(namespace) else {
        return Err(TenantRefusal::NotATenant {
            namespace: namespace.to_owned(),
        });
    };
    let parent = GroupKind::of(&info.parent);
    if !tenant.kinds.contains(&parent) || is_builtin_group(&parent.group) {
        let granted: Vec<String> = tenant.kinds.iter().map(ToString::to_string).collect();
        return Err(TenantRefusal::KindNotGranted {
            plugin: info.label(),
            namespace: namespace.to_owned(),
            kind: describe(&info.parent),
            granted: if granted.is_empty() {
                "none".to_owned()
            } else {
                granted.join(", ")
            },
        });
    }
    if policy.plugins.contains_key(&info.name) {
        return Err(TenantRefusal::WidenedGrant {
            plugin: info.label(),
            name: info.name.clone(),
        });
    }
    match kinds.resolve(&info.parent) {
        Resolved::Served {
            scope: Scope::Namespaced,
            ..
        } => {}
        Resolved::Served { .. } => {
            return Err(TenantRefusal::ClusterScoped {
                plugin: info.label(),
                role: "parent",
                kind: describe(&info.parent),
            });
        }
        Resolved::NotServed | Resolved::Unknown => {
            return Err(TenantRefusal::ParentNotInstalled {
                plugin: info.label(),
                kind: describe(&info.parent),
            });
        }
    }
    // The rules of every plugin, under the policy's kinds with nothing widened and no builtin
    // parent; the plugin's CRD is not its to install, so it is not looked at.
    let rules = Policy {
        builtin_parents: Vec::new(),
        plugins: std::collections::BTreeMap::new(),
        tenants: std::collections::BTreeMap::new(),
        ..policy.clone()
    };
    let declared = PluginInfo {
        crd: None,
        ..info.clone()
    };
    let admitted = admit(&rules, &declared, kinds)?;
    // Declared scopes are what discovery serves (checked above): none may be cluster-wide.
    let roles = [("child", &info.children), ("related", &info.related)];
    for (role, declared) in roles {
        if let Some(kind) = declared.iter().find(|k| !k.namespaced) {
            return Err(TenantRefusal::ClusterScoped {
                plugin: info.label(),
                role,
                kind: describe(kind),
            });
        }
    }
    Ok(TenantAdmitted {
        admitted,
        namespace: namespace.to_owned(),
    })
}

#[cfg(test)]
#[path = "tenant_tests.rs"]
mod tests;
