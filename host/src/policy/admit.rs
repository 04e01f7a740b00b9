//! The admission itself: [`admit`] checks every name a plugin declared, then its parent, its
//! children and its related kinds against the [`Policy`] and what the API server serves.

use super::kinds::{self, Resolve, Resolved, Scope};
use super::refusal::describe;
use super::{GroupKind, Policy, PolicyRefusal, crd};
use crate::answer::Grant;
use crate::plugin::{PluginInfo, ResourceKind};

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
    policy.grant_for(&info.name).filter(|g| g.widens())
}

fn admit_parent(
    policy: &Policy,
    info: &PluginInfo,
    kinds: &dyn Resolve,
) -> Result<bool, PolicyRefusal> {
    let parent = &info.parent;
    if kinds::is_never(&parent.group, &parent.kind) {
        return Err(PolicyRefusal::Never {
            plugin: info.label(),
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
            plugin: info.label(),
            kind: describe(parent),
        });
    }
    match kinds.resolve(parent) {
        Resolved::Served { plural, scope } => served_as(info, "parent", parent, &plural, scope)?,
        // A CRD not installed yet (by `weir dev`, or `deploy/crd/` applied alongside the host).
        Resolved::NotServed if !builtin => {}
        Resolved::NotServed => {
            return Err(PolicyRefusal::NotServed {
                plugin: info.label(),
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
            plugin: info.label(),
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
            plugin: info.label(),
            role: "child",
            kind: kind(),
        });
    }
    if !policy.children.contains(&GroupKind::of(child)) {
        return Err(PolicyRefusal::ChildNotAllowed {
            plugin: info.label(),
            kind: kind(),
        });
    }
    match kinds.resolve(child) {
        Resolved::Served {
            scope: Scope::Cluster,
            ..
        } => Err(PolicyRefusal::ClusterScopedChild {
            plugin: info.label(),
            kind: kind(),
        }),
        Resolved::Served { plural, scope } => served_as(info, "child", child, &plural, scope),
        Resolved::NotServed => Err(PolicyRefusal::NotServed {
            plugin: info.label(),
            role: "child",
            kind: kind(),
        }),
        Resolved::Unknown => Err(PolicyRefusal::Unverifiable {
            plugin: info.label(),
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
            plugin: info.label(),
            role: "related",
            kind: kind(),
        });
    }
    if !policy.related.contains(&GroupKind::of(related)) {
        return Err(PolicyRefusal::RelatedNotAllowed {
            plugin: info.label(),
            kind: kind(),
        });
    }
    match kinds.resolve(related) {
        Resolved::Served { plural, scope } => served_as(info, "related", related, &plural, scope),
        Resolved::NotServed => Err(PolicyRefusal::NotServed {
            plugin: info.label(),
            role: "related",
            kind: kind(),
        }),
        Resolved::Unknown => Err(PolicyRefusal::Unverifiable {
            plugin: info.label(),
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
        plugin: info.label(),
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
            plugin: info.label(),
            role,
            field,
            value: value.to_owned(),
        }),
    }
}
