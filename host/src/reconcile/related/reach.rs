//! How far a plugin's selections reach beyond its parent's namespace and cluster: what the policy's entry for it grants.

use std::sync::Arc;

use super::RelatedKind;
use crate::answer::Grant;
use crate::plugin::ResourceKind;
use crate::runtime::ObjectKey;
use crate::runtime::cache::Store;

/// The member clusters a plugin's selections may read in (contract 0.4.0).
pub trait MemberReach {
    /// Whether the policy's entry grants the plugin `cluster` ([`Grant::may_allow_cluster`]).
    fn granted(&self, cluster: &str) -> bool;
    /// The clusters the entry grants, as a refusal names them (`none` without any).
    fn grants(&self) -> String;
    /// Whether `cluster` is engaged now and its cache of `kind` holds its first list.
    fn reads(&self, cluster: &str, kind: &ResourceKind) -> bool;
}

/// The namespaces beyond the parent's that the policy's entry for a plugin lets it read.
pub trait Namespaces {
    /// Whether objects in `ns` may be read.
    fn allows(&self, ns: &str) -> bool;
    /// Every namespace that may be read (named, or selected by label now).
    fn all(&self) -> Vec<String>;
}

/// The policy's entry for a plugin and the host's cache of Namespaces (their labels), when
/// the entry selects namespaces by label.
#[derive(Clone, Default)]
pub struct Reach {
    /// The entry, if the policy has one that widens anything.
    pub grant: Option<Grant>,
    /// The host's Namespaces, for the entry's `namespaceSelector`.
    pub namespaces: Option<Arc<Store>>,
}

impl Namespaces for Reach {
    fn allows(&self, ns: &str) -> bool {
        let Some(grant) = &self.grant else {
            return false;
        };
        if grant.namespaces.iter().any(|n| n == ns) {
            return true;
        }
        let (Some(selector), Some(store)) = (&grant.namespace_selector, &self.namespaces) else {
            return false;
        };
        let key = ObjectKey {
            namespace: None,
            name: ns.to_owned(),
        };
        store
            .get(&key)
            .is_some_and(|n| selector.matches_with(|k| n.label(k)))
    }

    fn all(&self) -> Vec<String> {
        let Some(grant) = &self.grant else {
            return Vec::new();
        };
        let mut all = grant.namespaces.clone();
        if let (Some(selector), Some(store)) = (&grant.namespace_selector, &self.namespaces) {
            all.extend(
                store
                    .select(None, selector)
                    .iter()
                    .map(|n| n.key().name.clone()),
            );
        }
        all.sort();
        all.dedup();
        all
    }
}

impl Reach {
    /// The widened namespaces, if the entry widens any.
    pub(super) fn namespaces(&self) -> Option<&dyn Namespaces> {
        self.grant
            .as_ref()
            .filter(|g| !g.namespaces.is_empty() || g.namespace_selector.is_some())
            .map(|_| self as &dyn Namespaces)
    }

    /// Whether related Secrets reach the plugin with their data.
    pub(super) fn secret_data(&self) -> bool {
        self.grant.as_ref().is_some_and(|g| g.secret_data)
    }
}

/// The members a plugin's selections read in: its entry's grant, and its kinds' listeners.
pub(super) struct Members<'a> {
    pub(super) grant: Option<&'a Grant>,
    pub(super) kinds: &'a [RelatedKind],
}

impl MemberReach for Members<'_> {
    fn granted(&self, cluster: &str) -> bool {
        let Some(grant) = self.grant else {
            return false;
        };
        let labels = (self.kinds.iter())
            .find_map(|k| k.members.as_ref())
            .and_then(|l| l.labels(cluster));
        // Not engaged: refused as such ([`MemberReach::reads`]), whatever its labels would say.
        grant.may_allow_cluster(cluster, labels.as_ref())
    }

    fn grants(&self) -> String {
        self.grant
            .map_or_else(|| "none".to_owned(), Grant::clusters_said)
    }

    fn reads(&self, cluster: &str, kind: &ResourceKind) -> bool {
        (self.kinds.iter())
            .find(|k| k.kind == *kind)
            .and_then(|k| k.members.as_ref())
            .is_some_and(|l| l.listed(cluster, kind))
    }
}
