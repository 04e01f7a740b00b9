//! Related objects (the seed's Watches): what a parent selected, checked against the plugin's
//! declaration, indexed for the watch events, and resolved from the host's caches.
//!
//! Before each reconcile (and finalize) of a plugin that declared related kinds, the controller
//! asks the plugin's `select` what to read for that parent, [`check`]s the answer (declared kinds
//! only, the parent's namespace only, well-formed names and selectors; a refusal goes on the
//! parent's condition like a refused answer), records it in each kind's [`KindIndex`] and hands
//! the plugin the selected objects that exist, Secrets redacted. The kinds are watched through
//! the host's informer registry with [`crate::runtime::informers::Route::Related`], which asks the
//! index which parents an event concerns.
//!
//! The policy's entry for a plugin ([`crate::answer::Grant`]) widens the namespaces a
//! selection may read ([`Reach`]): a named namespace the entry allows, or for a cluster-scoped
//! parent no namespace at all, meaning every namespace the entry allows; and it may hand
//! related Secrets over with their data. Without an entry, a selection stays in the parent's
//! namespace.
//!
//! A selection may name a member cluster (contract 0.4.0). It is read there when the policy's
//! entry grants the plugin that cluster (the grant that lets it place children there,
//! [`crate::answer::Grant::allows_cluster`]) and the host has engaged it and its cache of the
//! kind holds its first list ([`MemberReach`]); not granted, it is refused naming what is granted; not engaged
//! (or not listed yet), the reconcile is refused for that pass, saying so, and the member's
//! first list enqueues the parent again. A served plugin's related kinds are watched in each
//! engaged member the policy grants it ([`RelatedKind::members`], on the member's own runtime
//! instance and packed cache), read from that cache, Secrets as at home; a change there enqueues
//! the parents that selected it through the same [`KindIndex`], keyed with the cluster. The
//! plugin is given each object with its cluster's name ([`Found`]).
//!
//! `weir test` takes the same path ([`Related::select`]) over stores filled with a fixture's
//! `related` objects ([`Related::offline`]): one check and one resolution, online and offline.

mod reach;

#[cfg(test)]
mod members_tests;
#[cfg(test)]
mod reach_tests;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use kube::api::DynamicObject;
use kube::runtime::watcher;

use self::reach::Members;
pub use self::reach::{MemberReach, Namespaces, Reach};
use super::invoke::cached_for_plugin;
use crate::answer::{Refusal, is_valid_name};
use crate::clusters::{Listening, MemberObject};
use crate::plugin::{LOCAL_CLUSTER, PluginInfo, ResourceKind, Selection, Selector};
use crate::runtime::ObjectKey;
use crate::runtime::cache::{CachedObject, Store};
pub use crate::runtime::related::{KindIndex, Pick};

/// Most selections one `select` answer may hold.
pub const MAX_SELECTIONS: usize = 64;

/// One checked selection: which declared related kind (its position in `related`) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Position of the kind in the plugin's `related`.
    pub kind: usize,
    /// The namespace and the name or selector.
    pub pick: Pick,
}

/// What a parent's selection read: the objects in its own cluster, and those in member
/// clusters (contract 0.4.0), each with its cluster's name. Secrets as the policy hands them
/// over (by default without their data).
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// In the parent's cluster (the host's own).
    pub home: Vec<Arc<CachedObject>>,
    /// In member clusters, each with its cluster's name.
    pub elsewhere: Vec<MemberObject>,
}

/// Checks a plugin's selection for a parent in `parent_namespace` against its declaration: only
/// declared related kinds, only the parent's namespace (no namespace for a cluster-scoped kind)
/// or one `widened` allows, only the parent's cluster or a member `members` reads (none
/// without it), valid names and selectors, at most [`MAX_SELECTIONS`]. Pure, so `weir test`
/// runs it offline.
pub fn check(
    info: &PluginInfo,
    parent_namespace: Option<&str>,
    selections: &[Selection],
    widened: Option<&dyn Namespaces>,
    members: Option<&dyn MemberReach>,
) -> Result<Vec<Checked>, Refusal> {
    if selections.len() > MAX_SELECTIONS {
        return Err(Refusal::TooLarge {
            what: format!("a selection of {} entries", selections.len()),
            limit: MAX_SELECTIONS,
        });
    }
    let mut checked = Vec::with_capacity(selections.len());
    for (index, s) in selections.iter().enumerate() {
        checked.extend(check_one(
            info,
            parent_namespace,
            (index, s),
            widened,
            members,
        )?);
    }
    Ok(checked)
}

/// The namespaces a selection of a namespaced kind reads: the parent's (the default), or the
/// one it names if that is the parent's or the policy's entry allows it; for a cluster-scoped
/// parent with an entry, no namespace means every namespace the entry allows.
fn namespaces_of(
    parent_namespace: Option<&str>,
    index: usize,
    s: &Selection,
    widened: Option<&dyn Namespaces>,
) -> Result<Vec<Option<String>>, Refusal> {
    let parent = parent_namespace.unwrap_or_default();
    match (s.namespace.as_deref(), widened) {
        (None, Some(widened)) if parent.is_empty() => {
            Ok(widened.all().into_iter().map(Some).collect())
        }
        (None, _) => Ok(vec![Some(parent.to_owned())]),
        (Some(ns), _) if ns == parent => Ok(vec![Some(parent.to_owned())]),
        (Some(ns), Some(widened)) if widened.allows(ns) => Ok(vec![Some(ns.to_owned())]),
        (Some(ns), Some(_)) => Err(Refusal::RelatedNamespaceNotGranted {
            index,
            kind: s.kind.clone(),
            wanted: ns.to_owned(),
        }),
        (Some(ns), None) => Err(Refusal::RelatedNamespace {
            index,
            kind: s.kind.clone(),
            wanted: ns.to_owned(),
            parent: parent.to_owned(),
        }),
    }
}

/// The member cluster a selection reads in: `None` for the parent's (named or not); a member
/// `members` grants and reads; refused otherwise.
fn cluster_of(
    (index, s): (usize, &Selection),
    kind: &ResourceKind,
    members: Option<&dyn MemberReach>,
) -> Result<Option<String>, Refusal> {
    let Some(cluster) = s.cluster.as_deref().filter(|c| *c != LOCAL_CLUSTER) else {
        return Ok(None);
    };
    let not_read = || Refusal::RelatedCluster {
        index,
        kind: s.kind.clone(),
        cluster: cluster.to_owned(),
    };
    // Without members (no `--clusters`), the host reads its own cluster only.
    let members = members.ok_or_else(not_read)?;
    if !members.granted(cluster) {
        return Err(Refusal::RelatedClusterNotGranted {
            index,
            kind: s.kind.clone(),
            cluster: cluster.to_owned(),
            granted: members.grants(),
        });
    }
    if !members.reads(cluster, kind) {
        return Err(not_read());
    }
    Ok(Some(cluster.to_owned()))
}

fn check_one(
    info: &PluginInfo,
    parent_namespace: Option<&str>,
    (index, s): (usize, &Selection),
    widened: Option<&dyn Namespaces>,
    members: Option<&dyn MemberReach>,
) -> Result<Vec<Checked>, Refusal> {
    let Some(kind) = info
        .related
        .iter()
        .position(|k| k.kind == s.kind && k.api_version() == s.api_version)
    else {
        return Err(Refusal::UndeclaredRelated {
            index,
            api_version: s.api_version.clone(),
            kind: s.kind.clone(),
            what: match &s.selector {
                Selector::Name(name) => format!("by name {name:?}"),
                Selector::Labels(_) => "by label selector".into(),
            },
        });
    };
    let cluster = cluster_of((index, s), &info.related[kind], members)?;
    let invalid = |reason: String| Refusal::InvalidSelection {
        index,
        kind: s.kind.clone(),
        reason,
    };
    let namespaces = if info.related[kind].namespaced {
        namespaces_of(parent_namespace, index, s, widened)?
    } else {
        if let Some(ns) = &s.namespace {
            return Err(invalid(format!(
                "{} is cluster-scoped, so it takes no namespace (asked for {ns:?})",
                s.kind
            )));
        }
        vec![None]
    };
    match &s.selector {
        Selector::Name(name) if !is_valid_name(name) => {
            return Err(invalid(format!("{name:?} is not a valid object name")));
        }
        Selector::Labels(selector) => {
            if let Some(problem) = selector.problem() {
                return Err(invalid(problem));
            }
        }
        Selector::Name(_) => {}
    }
    Ok(namespaces
        .into_iter()
        .map(|namespace| Checked {
            kind,
            pick: Pick {
                cluster: cluster.clone(),
                namespace,
                selector: s.selector.clone(),
            },
        })
        .collect())
}

/// Whether `obj` (of the pick's kind) is what `pick` selects.
pub fn selects(pick: &Pick, obj: &CachedObject) -> bool {
    if obj.namespace() != pick.namespace.as_deref() {
        return false;
    }
    match &pick.selector {
        Selector::Name(name) => obj.name() == name.as_str(),
        Selector::Labels(selector) => selector.matches_with(|k| obj.label(k)),
    }
}

/// One declared related kind of a plugin version: its shared store and its index.
pub struct RelatedKind {
    /// The kind.
    pub kind: ResourceKind,
    /// The parents that selected objects of it, in the host's own cluster and in members.
    pub index: Arc<KindIndex>,
    /// The host's cache of the kind (shared through the informer registry).
    pub store: Arc<Store>,
    /// The kind heard in each engaged member the policy grants the plugin, routed through
    /// `index` keyed with the member's name; `None` on a host that engages no member.
    pub members: Option<Listening>,
}

/// The related kinds of one plugin version, in the order it declared them.
#[derive(Default)]
pub struct Related {
    kinds: Vec<RelatedKind>,
    reach: Reach,
}

impl Related {
    /// The related kinds, in declaration order (as [`Checked::kind`] counts them).
    pub fn new(kinds: Vec<RelatedKind>) -> Self {
        Self {
            kinds,
            reach: Reach::default(),
        }
    }

    /// The same kinds, read as far as the policy's entry for the plugin reaches.
    pub fn reaching(mut self, reach: Reach) -> Self {
        self.reach = reach;
        self
    }

    /// Whether the plugin declared no related kind (a 0.1.0 plugin never does).
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The stores, for readiness.
    pub fn stores(&self) -> impl Iterator<Item = &Arc<Store>> {
        self.kinds.iter().map(|k| &k.store)
    }

    /// The related kinds `info` declares, each with a store holding the `objects` of that kind
    /// (objects of other kinds are left out: the plugin could not read them) and an empty
    /// index: the cluster a `weir test` fixture describes, or the one `weir record` listed.
    pub fn offline(info: &PluginInfo, objects: impl IntoIterator<Item = DynamicObject>) -> Self {
        let stores: Vec<Arc<Store>> = info
            .related
            .iter()
            .map(|kind| {
                let store = Store::new(kind.clone());
                store.index_labels();
                store.apply(watcher::Event::Init);
                Arc::new(store)
            })
            .collect();
        for obj in objects {
            let types = obj.types.clone().unwrap_or_default();
            if let Some(i) = info
                .related
                .iter()
                .position(|k| k.kind == types.kind && k.api_version() == types.api_version)
            {
                // A listed object that does not re-encode is one the watch would not have cached.
                if let Ok(obj) = CachedObject::from_object_packed(&obj, stores[i].packing()) {
                    stores[i].apply(watcher::Event::InitApply(obj));
                }
            }
        }
        let kinds = info
            .related
            .iter()
            .zip(stores)
            .map(|(kind, store)| {
                store.apply(watcher::Event::InitDone);
                RelatedKind {
                    kind: kind.clone(),
                    index: Arc::new(KindIndex::default()),
                    store,
                    members: None,
                }
            })
            .collect();
        Self::new(kinds)
    }

    /// What the plugin's `selections` for `parent` read: [`check`]ed against `info`, recorded as
    /// the parent's whole selection in the index, and [`resolve`](Self::resolve)d from the
    /// stores. A refused selection is forgotten instead (the parent selects nothing).
    pub fn select(
        &self,
        info: &PluginInfo,
        parent: &ObjectKey,
        selections: &[Selection],
    ) -> Result<Found, Refusal> {
        let widened = self.reach.namespaces();
        let members = Members {
            grant: self.reach.grant.as_ref(),
            kinds: &self.kinds,
        };
        let members = (self.kinds.iter().any(|k| k.members.is_some()))
            .then_some(&members as &dyn MemberReach);
        match check(
            info,
            parent.namespace.as_deref(),
            selections,
            widened,
            members,
        ) {
            Ok(checked) => {
                self.record(parent, &checked);
                Ok(self.resolve(&checked))
            }
            Err(refusal) => {
                self.forget(parent);
                Err(refusal)
            }
        }
    }

    /// Makes `checked` the whole selection of `parent`, kind by kind.
    pub fn record(&self, parent: &ObjectKey, checked: &[Checked]) {
        for (i, kind) in self.kinds.iter().enumerate() {
            let picks = checked
                .iter()
                .filter(|c| c.kind == i)
                .map(|c| c.pick.clone());
            kind.index.set(parent, picks);
        }
    }

    /// Forgets `parent` in every kind's index (it is gone, or its selection was refused).
    pub fn forget(&self, parent: &ObjectKey) {
        for kind in &self.kinds {
            kind.index.forget(parent);
        }
    }

    /// The selected objects the caches hold, each once, Secrets without their data (unless the
    /// policy's entry for the plugin says `secretData`): the host's own cache of the kind, or
    /// the member's a pick names. A name is one lookup; a label selector reads the candidates
    /// of the kind's label index.
    pub fn resolve(&self, checked: &[Checked]) -> Found {
        let mut found = Found::default();
        let mut seen = std::collections::HashSet::new();
        for c in checked {
            let Some(kind) = self.kinds.get(c.kind) else {
                continue;
            };
            let store = match &c.pick.cluster {
                None => Some(kind.store.clone()),
                Some(cluster) => (kind.members.as_ref()).and_then(|l| l.store(cluster, &kind.kind)),
            };
            let Some(store) = store else {
                continue;
            };
            let objects = match &c.pick.selector {
                Selector::Name(name) => {
                    let key = ObjectKey {
                        namespace: c.pick.namespace.clone(),
                        name: name.clone(),
                    };
                    store.get(&key).into_iter().collect()
                }
                Selector::Labels(selector) => store.select(c.pick.namespace.as_deref(), selector),
            };
            for obj in objects {
                let id = (c.kind, c.pick.cluster.clone(), obj.key());
                if !seen.insert(id) {
                    continue;
                }
                let obj = if self.reach.secret_data() {
                    Some(obj)
                } else {
                    cached_for_plugin(&obj)
                };
                match (&c.pick.cluster, obj) {
                    (_, None) => {}
                    (None, Some(obj)) => found.home.push(obj),
                    (Some(cluster), Some(obj)) => found.elsewhere.push((cluster.clone(), obj)),
                }
            }
        }
        found
    }
}
