//! The related index of one kind: from an object's name, and from its labels, to the parents that
//! selected it, so a watch event enqueues exactly those parents without scanning any.
//!
//! Each parent's selection replaces its previous one whole ([`KindIndex::set`]), every time the
//! parent is reconciled. Selections by name are kept by the selected key: a name that does not
//! exist yet is indexed like any other, so its creation finds the parent. Selections by labels
//! are kept by one `matchLabels` pair (the first); a change looks up each of the object's labels,
//! before and after the change, and checks the candidates' whole selectors. Selectors without
//! `matchLabels` (only expressions, or empty) are kept per namespace and checked against every
//! change there: the one case that costs a pass over those selectors. A parent's key is kept
//! once (an `Arc`) however many entries name it.
//!
//! A selection may read in a member cluster (contract 0.4.0): its pick names the cluster, and
//! its entries are kept in that cluster's tables beside the host's own, so a change in a member
//! ([`KindIndex::parents_in`]) finds exactly the parents that selected it there, through the
//! same lookups.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

use crate::plugin::{LabelSelector, Selector};
use crate::runtime::ObjectKey;
use crate::runtime::cache::CachedObject;

/// What one parent selected of this kind: a name or a label selector, in a namespace (`None`
/// for a cluster-scoped kind), in a cluster (`None`: the host's own).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pick {
    /// The member cluster read (contract 0.4.0), or `None` for the host's own cluster.
    pub cluster: Option<String>,
    /// The namespace read (the parent's), or `None` for a cluster-scoped kind.
    pub namespace: Option<String>,
    /// The name or labels.
    pub selector: Selector,
}

/// `(namespace, label key, label value)`.
type LabelKey = (Option<String>, String, String);

/// The index of one related kind, shared by the controller (which refreshes it) and the kind's
/// watch route (which reads it on every event).
#[derive(Default)]
pub struct KindIndex {
    inner: RwLock<Inner>,
    /// Parents the index mapped a change to (`weir_related_enqueues_total`).
    enqueued: Counter,
    /// Where the index's size is shown (`weir_index_entries{index="related"}`), shared with the
    /// other plugins' indexes of the kind.
    entries: Gauge,
}

#[derive(Default)]
struct Inner {
    /// The entries of selections in the host's own cluster.
    home: Tables,
    /// The entries of selections in member clusters, by cluster (none left: no table).
    members: HashMap<String, Tables>,
    /// Parent → what it selected (to undo it, and to check candidates' whole selectors).
    picks: HashMap<Arc<ObjectKey>, HashSet<Pick>>,
    /// Picks, and the entries of the tables they made.
    entries: usize,
}

/// The lookups of one cluster's selections.
#[derive(Default)]
struct Tables {
    /// Selected object key → the parents that selected it by name.
    names: HashMap<ObjectKey, HashSet<Arc<ObjectKey>>>,
    /// One `matchLabels` pair of a selector → the parents whose selector has it.
    labels: HashMap<LabelKey, HashSet<Arc<ObjectKey>>>,
    /// Namespace → the parents with a selector that has no `matchLabels`.
    unkeyed: HashMap<Option<String>, HashSet<Arc<ObjectKey>>>,
}

impl Inner {
    fn add(&mut self, parent: &Arc<ObjectKey>, pick: &Pick) {
        self.entries += 2;
        let tables = match &pick.cluster {
            None => &mut self.home,
            Some(cluster) => self.members.entry(cluster.clone()).or_default(),
        };
        tables.add(parent, pick);
    }

    fn remove(&mut self, parent: &ObjectKey, pick: &Pick) {
        self.entries = self.entries.saturating_sub(2);
        match &pick.cluster {
            None => self.home.remove(parent, pick),
            Some(cluster) => {
                if let Some(tables) = self.members.get_mut(cluster) {
                    tables.remove(parent, pick);
                    if tables.is_empty() {
                        self.members.remove(cluster);
                    }
                }
            }
        }
    }

    /// The tables of `cluster` (`None`: the host's own), if any selection reads there.
    fn tables(&self, cluster: Option<&str>) -> Option<&Tables> {
        match cluster {
            None => Some(&self.home),
            Some(cluster) => self.members.get(cluster),
        }
    }
}

impl Tables {
    fn is_empty(&self) -> bool {
        self.names.is_empty() && self.labels.is_empty() && self.unkeyed.is_empty()
    }

    fn add(&mut self, parent: &Arc<ObjectKey>, pick: &Pick) {
        match &pick.selector {
            Selector::Name(name) => {
                let key = ObjectKey {
                    namespace: pick.namespace.clone(),
                    name: name.clone(),
                };
                self.names.entry(key).or_default().insert(parent.clone());
            }
            Selector::Labels(selector) => match first_pair(&pick.namespace, selector) {
                Some(label) => {
                    self.labels.entry(label).or_default().insert(parent.clone());
                }
                None => {
                    let ns = pick.namespace.clone();
                    self.unkeyed.entry(ns).or_default().insert(parent.clone());
                }
            },
        }
    }

    fn remove(&mut self, parent: &ObjectKey, pick: &Pick) {
        fn drop_from<K: std::hash::Hash + Eq>(
            map: &mut HashMap<K, HashSet<Arc<ObjectKey>>>,
            key: K,
            parent: &ObjectKey,
        ) {
            if let Some(set) = map.get_mut(&key) {
                set.remove(parent);
                if set.is_empty() {
                    map.remove(&key);
                }
            }
        }
        match &pick.selector {
            Selector::Name(name) => {
                let key = ObjectKey {
                    namespace: pick.namespace.clone(),
                    name: name.clone(),
                };
                drop_from(&mut self.names, key, parent);
            }
            Selector::Labels(selector) => match first_pair(&pick.namespace, selector) {
                Some(label) => drop_from(&mut self.labels, label, parent),
                None => drop_from(&mut self.unkeyed, pick.namespace.clone(), parent),
            },
        }
    }
}

fn first_pair(namespace: &Option<String>, selector: &LabelSelector) -> Option<LabelKey> {
    let (k, v) = selector.match_labels.iter().next()?;
    Some((namespace.clone(), k.clone(), v.clone()))
}

impl Drop for KindIndex {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner);
        self.entries
            .dec_by(i64::try_from(inner.entries).unwrap_or(i64::MAX));
    }
}

impl std::fmt::Debug for KindIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindIndex")
            .field("parents", &self.parents())
            .finish()
    }
}

impl KindIndex {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// An empty index that counts the parents it maps changes to in `enqueued`.
    pub fn counting(enqueued: Counter, entries: Gauge) -> Self {
        Self {
            inner: RwLock::default(),
            enqueued,
            entries,
        }
    }

    /// Makes `picks` the whole selection of `parent` of this kind (empty: it selects nothing).
    pub fn set(&self, parent: &ObjectKey, picks: impl IntoIterator<Item = Pick>) {
        let picks: HashSet<Pick> = picks.into_iter().collect();
        let mut inner = self.write();
        if inner.picks.get(parent) == Some(&picks) {
            return;
        }
        let before = inner.entries;
        let shared = match inner.picks.remove_entry(parent) {
            Some((shared, old)) => {
                for pick in &old {
                    inner.remove(parent, pick);
                }
                shared
            }
            None => Arc::new(parent.clone()),
        };
        if !picks.is_empty() {
            for pick in &picks {
                inner.add(&shared, pick);
            }
            inner.picks.insert(shared, picks);
        }
        let size = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.entries.inc_by(size(inner.entries) - size(before));
    }

    /// Forgets `parent` (deleted, or refused).
    pub fn forget(&self, parent: &ObjectKey) {
        self.set(parent, []);
    }

    /// The parents a change of an object in the host's own cluster concerns
    /// ([`KindIndex::parents_in`] it).
    pub fn parents_of(&self, old: Option<&CachedObject>, new: &CachedObject) -> Vec<ObjectKey> {
        self.parents_in(None, old, new)
    }

    /// The parents a change of an object in `cluster` (`None`: the host's own) concerns: those
    /// that selected its name there, and those whose label selector there matches its labels
    /// before (`old`) or after (`new`) the change. Sorted, without duplicates.
    pub fn parents_in(
        &self,
        cluster: Option<&str>,
        old: Option<&CachedObject>,
        new: &CachedObject,
    ) -> Vec<ObjectKey> {
        let inner = self.read();
        let Some(tables) = inner.tables(cluster) else {
            return Vec::new();
        };
        let mut found: HashSet<ObjectKey> = HashSet::new();
        if let Some(parents) = tables.names.get(&new.key()) {
            found.extend(parents.iter().map(|p| (**p).clone()));
        }
        let namespace = new.namespace().map(str::to_owned);
        let versions: Vec<&CachedObject> = std::iter::once(new).chain(old).collect();
        let mut candidates: HashSet<&Arc<ObjectKey>> = HashSet::new();
        for version in &versions {
            for (k, v) in version.labels() {
                let label = (namespace.clone(), k.to_string(), v.to_string());
                if let Some(parents) = tables.labels.get(&label) {
                    candidates.extend(parents);
                }
            }
        }
        if let Some(parents) = tables.unkeyed.get(&namespace) {
            candidates.extend(parents);
        }
        for parent in candidates {
            let selected = inner.picks.get(parent).is_some_and(|picks| {
                picks.iter().any(|pick| match &pick.selector {
                    Selector::Labels(selector)
                        if pick.namespace == namespace && pick.cluster.as_deref() == cluster =>
                    {
                        versions
                            .iter()
                            .any(|version| selector.matches_with(|k| version.label(k)))
                    }
                    _ => false,
                })
            });
            if selected {
                found.insert((**parent).clone());
            }
        }
        let mut keys: Vec<ObjectKey> = found.into_iter().collect();
        keys.sort();
        self.enqueued.inc_by(keys.len() as u64);
        keys
    }

    /// Parents with a selection of this kind.
    pub fn parents(&self) -> usize {
        self.read().picks.len()
    }
}
