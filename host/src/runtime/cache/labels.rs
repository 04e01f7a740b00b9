//! The label index of one store: per namespace, from each label key and value to the objects
//! that carry it, so a label selection reads its candidates rather than the whole kind.
//!
//! A selector with `matchLabels` reads the smallest set among its pairs; one with only
//! expressions reads the objects its first `In` or `Exists` names; one with neither (`NotIn`,
//! `DoesNotExist` or empty) reads the namespace's objects. The candidates are then checked
//! against the whole selector. The index holds the store's `Arc`s, and each label key and value
//! once per namespace, shared by every entry that carries it.

use std::collections::HashMap;
use std::hash::RandomState;
use std::sync::Arc;

use hashbrown::hash_map::EntryRef;

use super::entry::{Entry, KeyRef, Set};
use super::object::CachedObject;
use crate::plugin::{LabelSelector, SelectorOperator};

/// The label index of one store (see the module documentation).
#[derive(Default)]
pub(super) struct LabelIndex {
    /// By namespace (`""` for a cluster-scoped kind).
    namespaces: HashMap<String, Namespace>,
    /// Entries in all the sets, for the gauge.
    entries: usize,
}

#[derive(Default)]
struct Namespace {
    all: Set,
    /// Label key → label value → the objects with that label.
    labels: Interned<Interned<Set>>,
}

/// A map whose keys are label keys or values, each kept once.
type Interned<V> = hashbrown::HashMap<Arc<str>, V, RandomState>;

/// The value under `key`, a default one added (with the key kept once) if there is none.
fn interned<'m, V: Default>(map: &'m mut Interned<V>, key: &str) -> &'m mut V {
    match map.entry_ref(key) {
        EntryRef::Occupied(e) => e.into_mut(),
        EntryRef::Vacant(e) => e.insert_with_key(Arc::from(key), V::default()),
    }
}

fn namespace_of(obj: &CachedObject) -> &str {
    obj.namespace().unwrap_or_default()
}

impl LabelIndex {
    /// An index of `objects`.
    pub(super) fn of<'a>(objects: impl Iterator<Item = &'a Arc<CachedObject>>) -> Self {
        let mut index = Self::default();
        for obj in objects {
            index.insert(obj);
        }
        index
    }

    /// Adds `obj` (whose previous version, if any, was removed).
    pub(super) fn insert(&mut self, obj: &Arc<CachedObject>) {
        let ns = self
            .namespaces
            .entry(namespace_of(obj).to_owned())
            .or_default();
        ns.all.insert(Entry(obj.clone()));
        for (k, v) in obj.labels() {
            interned(interned(&mut ns.labels, k), v).insert(Entry(obj.clone()));
        }
        self.entries += 1 + obj.labels().len();
    }

    /// Removes `obj` (as it was indexed).
    pub(super) fn remove(&mut self, obj: &CachedObject) {
        let name = namespace_of(obj);
        let Some(ns) = self.namespaces.get_mut(name) else {
            return;
        };
        let key = KeyRef::of(obj);
        if ns.all.remove(&key) {
            self.entries -= 1;
        }
        for (k, v) in obj.labels() {
            let Some(values) = ns.labels.get_mut(k) else {
                continue;
            };
            if let Some(set) = values.get_mut(v) {
                if set.remove(&key) {
                    self.entries -= 1;
                }
                if set.is_empty() {
                    values.remove(v);
                }
            }
            if values.is_empty() {
                ns.labels.remove(k);
            }
        }
        if ns.all.is_empty() {
            self.namespaces.remove(name);
        }
    }

    /// The objects in `namespace` that `selector` selects, sorted by name.
    pub(super) fn select(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<CachedObject>> {
        let Some(ns) = self.namespaces.get(namespace.unwrap_or_default()) else {
            return Vec::new();
        };
        let mut found: Vec<Arc<CachedObject>> = ns
            .candidates(selector)
            .into_iter()
            .filter(|obj| selector.matches_with(|k| obj.label(k)))
            .collect();
        found.sort_by(|a, b| a.name().cmp(b.name()));
        // Values listed twice by an `In` give the same object twice.
        found.dedup_by(|a, b| KeyRef::of(a) == KeyRef::of(b));
        found
    }

    /// The objects in every namespace (and none) that `selector` selects, by namespace, then
    /// by name.
    pub(super) fn select_anywhere(&self, selector: &LabelSelector) -> Vec<Arc<CachedObject>> {
        let mut found: Vec<Arc<CachedObject>> = self
            .namespaces
            .values()
            .flat_map(|ns| ns.candidates(selector))
            .filter(|obj| selector.matches_with(|k| obj.label(k)))
            .collect();
        found.sort_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
        found.dedup_by(|a, b| KeyRef::of(a) == KeyRef::of(b));
        found
    }

    /// Entries in the index's sets.
    pub(super) fn entries(&self) -> usize {
        self.entries
    }
}

impl Namespace {
    fn with(&self, key: &str, value: &str) -> Option<&Set> {
        self.labels.get(key)?.get(value)
    }

    /// A superset of what `selector` selects here.
    fn candidates(&self, selector: &LabelSelector) -> Vec<Arc<CachedObject>> {
        let arcs = |set: &Set| set.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
        if !selector.match_labels.is_empty() {
            let sets: Option<Vec<&Set>> = selector
                .match_labels
                .iter()
                .map(|(k, v)| self.with(k, v))
                .collect();
            return sets
                .and_then(|sets| sets.into_iter().min_by_key(|s| s.len()))
                .map(arcs)
                .unwrap_or_default();
        }
        let keyed = selector
            .match_expressions
            .iter()
            .find(|r| matches!(r.operator, SelectorOperator::In | SelectorOperator::Exists));
        let Some(r) = keyed else {
            return arcs(&self.all);
        };
        let Some(values) = self.labels.get(r.key.as_str()) else {
            return Vec::new();
        };
        match r.operator {
            SelectorOperator::In => r
                .values
                .iter()
                .filter_map(|v| values.get(v.as_str()))
                .flat_map(arcs)
                .collect(),
            _ => values.values().flat_map(arcs).collect(),
        }
    }
}
