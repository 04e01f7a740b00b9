//! The namespaces being terminated, and which of them changed since the namespace controller
//! last looked: kept beside the objects so that the controller wakes only for its own work.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::Notify;

use crate::store::ObjKey;
use crate::wire::object;

/// Namespaces with a `deletionTimestamp`, and the ones among them whose contents (or own
/// state) changed since [`Terminating::take_changed`] was last called.
#[derive(Debug, Default)]
pub struct Terminating {
    names: HashSet<String>,
    changed: BTreeSet<String>,
    wake: Arc<Notify>,
}

/// Whether `key` addresses a Namespace.
pub fn is_namespace(key: &ObjKey) -> bool {
    key.res.group.is_empty() && key.res.plural == "namespaces"
}

impl Terminating {
    /// Follow a Namespace stored (`add`) or no longer stored in that state (`!add`).
    pub fn track(&mut self, key: &ObjKey, obj: &Value, add: bool) {
        if !is_namespace(key) {
            return;
        }
        if add && object::is_deleting(obj) {
            self.names.insert(key.name.clone());
        } else if !add {
            self.names.remove(&key.name);
        }
    }

    /// Note a change at `key`: one in a terminating namespace, or to such a namespace itself,
    /// wakes the controller.
    pub fn touched(&mut self, key: &ObjKey) {
        if self.names.is_empty() {
            return;
        }
        let ns = if is_namespace(key) {
            &key.name
        } else {
            &key.ns
        };
        if self.names.contains(ns) {
            self.changed.insert(ns.clone());
            self.wake.notify_one();
        }
    }

    /// The terminating namespaces that changed since the last call, forgotten as changed.
    pub fn take_changed(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.changed)
    }

    /// Mark every terminating namespace changed (a controller starting looks at all of them).
    pub fn all_changed(&mut self) {
        self.changed.extend(self.names.iter().cloned());
        if !self.changed.is_empty() {
            self.wake.notify_one();
        }
    }

    /// What the controller waits on: notified after a change is noted.
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }
}
