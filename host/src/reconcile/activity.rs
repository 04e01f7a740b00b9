//! What the host did, as it happens: a broadcast feed of writes, drift put back, failures and swaps.
//!
//! Each outcome is reported where it is decided: the reconcile's apply step (created, updated,
//! put back, pruned), the error funnel (`Controller::error_policy`: failed, refused), the worker
//! (every reconcile's result, for "last reconcile"), and the manager's plugin events (loaded,
//! swapped, removed, a file refused). `weir dev`'s live view subscribes; a host nobody watches
//! (`weir run`) builds no message at all: every report first checks for a receiver.
//!
//! A child whose live copy differs from the desired one is *put back* when the plugin's manifest
//! is the one the host last applied to it, or found in place (so someone else edited the child),
//! and *updated* otherwise (the plugin now wants something else, or the host never applied it).
//! The feed remembers, per child, the hash of the manifest it last applied (while someone
//! watches); the live child's own annotations play no part, so an edit that also changes them
//! (`kubectl rollout undo` copies an old revision's) still reads as put back. Either names the
//! first field that differed, e.g. `spec.replicas`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use kube::api::DynamicObject;
use serde_json::Value;
use tokio::sync::broadcast;

use super::apply::Change;
use super::error::{ErrorAction, ResultLabel};
use crate::answer::{DesiredChild, MANIFEST_HASH_ANNOTATION, holds};
use crate::hotload::{FileRefusal, PluginEvent};
use crate::plugin::{Plugin, PluginInfo};
use crate::runtime::ObjectKey;

/// Activities kept for a receiver that falls behind; older ones are dropped (it sees a gap).
const BACKLOG: usize = 1024;
/// Children whose last applied manifest is remembered; past this the memory starts afresh.
const REMEMBERED: usize = 100_000;

/// One thing the host did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Activity {
    /// A reconcile ended (every reconcile, converged ones included).
    Reconciled {
        /// `name@version` of the plugin.
        plugin: String,
        /// `Kind ns/name` of the parent.
        parent: String,
        /// How it ended.
        outcome: ResultLabel,
    },
    /// A child was written: created, updated to a new desired state, or put back after an
    /// outside edit.
    Wrote {
        /// `name@version` of the plugin.
        plugin: String,
        /// `Kind ns/name` of the parent.
        parent: String,
        /// `Kind ns/name` of the child.
        child: String,
        /// What kind of write it was.
        write: Write,
        /// The first field whose live value differed from the desired one (not for a create).
        field: Option<String>,
    },
    /// A reconcile failed or its answer was refused (the error funnel's decision).
    Failed {
        /// `name@version` of the plugin.
        plugin: String,
        /// `Kind ns/name` of the parent.
        parent: String,
        /// `Error` or `Refused` (the answer broke the contract; nothing was written).
        outcome: ResultLabel,
        /// The `Reconciled` condition's reason (`Refused`, `TransientError`, ...).
        reason: &'static str,
        /// The message, as the condition and the Event carry it.
        message: String,
    },
    /// A parent kept writing or requeueing without an outside change and is throttled.
    HotLoop {
        /// `name@version` of the plugin.
        plugin: String,
        /// `Kind ns/name` of the parent.
        parent: String,
    },
    /// A plugin now serves a kind nobody served.
    Loaded {
        /// `name@version` and the start of its sha256.
        plugin: String,
        /// The parent kind.
        kind: String,
    },
    /// A kind's plugin was swapped in place.
    Swapped {
        /// The parent kind.
        kind: String,
        /// `name@version (sha256 prefix)` that served until now.
        from: String,
        /// `name@version (sha256 prefix)` that serves from now on.
        to: String,
    },
    /// A plugin's file went away; its kind is no longer served (its children stay).
    Unloaded {
        /// `name@version` of the plugin.
        plugin: String,
        /// The parent kind.
        kind: String,
    },
    /// A component file could not be served; what served before keeps serving.
    FileRefused {
        /// The file.
        file: String,
        /// Why.
        reason: String,
    },
}

/// How a child was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// It did not exist.
    Created,
    /// The plugin's desired state changed.
    Updated,
    /// Someone else changed it; the desired state was put back.
    PutBack,
    /// The plugin no longer wants it: deleted.
    Pruned,
}

impl fmt::Display for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Activity::Reconciled {
                parent, outcome, ..
            } => write!(f, "reconciled {parent}: {}", outcome.as_str()),
            Activity::Wrote {
                parent,
                child,
                write,
                field,
                ..
            } => {
                let verb = match write {
                    Write::Created => "created",
                    Write::Updated => "updated",
                    Write::PutBack => "put back",
                    Write::Pruned => "pruned",
                };
                write!(f, "{verb} {child}")?;
                if let Some(field) = field {
                    write!(f, " ({field})")?;
                }
                write!(f, " of {parent}")
            }
            Activity::Failed {
                plugin,
                parent,
                outcome: ResultLabel::Refused,
                message,
                ..
            } => write!(f, "refused {plugin} for {parent}: {message}"),
            Activity::Failed {
                parent,
                reason,
                message,
                ..
            } => write!(f, "failed {parent} ({reason}): {message}"),
            Activity::HotLoop { parent, .. } => write!(f, "hot loop on {parent}: throttled"),
            Activity::Loaded { plugin, kind } => write!(f, "loaded {plugin} for {kind}"),
            Activity::Swapped { kind, from, to } => write!(f, "swapped {kind}: {from} → {to}"),
            Activity::Unloaded { plugin, kind } => {
                write!(f, "unloaded {plugin}: {kind} no longer served")
            }
            Activity::FileRefused { file, reason } => write!(f, "refused {file}: {reason}"),
        }
    }
}

/// The sending side, shared by every controller of a host (cheap to clone).
#[derive(Clone, Debug)]
pub struct ActivityFeed {
    tx: broadcast::Sender<Activity>,
    /// Per child (`Kind`, key; `Kind@cluster` in a member): the hash of the manifest the host
    /// last applied or found in place.
    applied: Arc<Mutex<HashMap<(String, ObjectKey), String>>>,
}

impl Default for ActivityFeed {
    fn default() -> Self {
        Self {
            tx: broadcast::Sender::new(BACKLOG),
            applied: Arc::default(),
        }
    }
}

fn parent_of(info: &PluginInfo, key: &ObjectKey) -> String {
    format!("{} {key}", info.parent.kind)
}

impl ActivityFeed {
    /// A receiver of everything reported from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Activity> {
        self.tx.subscribe()
    }

    fn send(&self, make: impl FnOnce() -> Activity) {
        if self.tx.receiver_count() > 0 {
            // Nobody listening any more is not an error.
            let _ = self.tx.send(make());
        }
    }

    /// A reconcile of `key` ended with `outcome`.
    pub fn reconciled(&self, info: &PluginInfo, key: &ObjectKey, outcome: ResultLabel) {
        self.send(|| Activity::Reconciled {
            plugin: info.label(),
            parent: parent_of(info, key),
            outcome,
        });
    }

    /// The apply step wrote `writes`, for the `desired` children of `key`.
    pub fn wrote(
        &self,
        info: &PluginInfo,
        key: &ObjectKey,
        writes: &[Change],
        desired: &[DesiredChild],
    ) {
        if self.tx.receiver_count() == 0 {
            return;
        }
        let mut applied = self.applied.lock().unwrap_or_else(PoisonError::into_inner);
        for change in writes {
            let (cluster, change) = match change {
                Change::InCluster(cluster, change) => (Some(cluster.as_str()), &**change),
                change => (None, change),
            };
            let (write, field) = match change {
                Change::InCluster(..) => continue,
                Change::Created(..) => (Write::Created, None),
                Change::Deleted(kind, child) => {
                    applied.remove(&(placed(kind, cluster), child.clone()));
                    (Write::Pruned, None)
                }
                Change::Updated(kind, child) => desired
                    .iter()
                    .find(|d| {
                        d.kind.kind == *kind && d.key == *child && d.cluster.as_deref() == cluster
                    })
                    .map_or((Write::Updated, None), |d| {
                        let last = applied.get(&(placed(kind, cluster), child.clone()));
                        let field = d
                            .live
                            .as_deref()
                            .and_then(|live| differing_field(live, &d.manifest));
                        (drift(last.map(String::as_str), &d.manifest), field)
                    }),
            };
            let (Change::Created(kind, child)
            | Change::Updated(kind, child)
            | Change::Deleted(kind, child)) = change
            else {
                continue;
            };
            let at = cluster.map(|c| format!(" in {c}")).unwrap_or_default();
            self.send(|| Activity::Wrote {
                plugin: info.label(),
                parent: parent_of(info, key),
                child: format!("{kind} {child}{at}"),
                write,
                field,
            });
        }
        if applied.len() > REMEMBERED {
            applied.clear();
        }
        // Written now or found in place: what the host applies to each child from here on.
        for d in desired {
            if let Some(hash) = hash_of(&d.manifest) {
                let kind = placed(&d.kind.kind, d.cluster.as_deref());
                applied.insert((kind, d.key.clone()), hash.to_owned());
            }
        }
    }

    /// The error funnel decided that the reconcile of `key` failed with `reason`.
    pub fn failed(&self, info: &PluginInfo, key: &ObjectKey, action: &ErrorAction, message: &str) {
        self.send(|| Activity::Failed {
            plugin: info.label(),
            parent: parent_of(info, key),
            outcome: action.label,
            reason: action.reason,
            message: message.to_owned(),
        });
    }

    /// The hot-loop guard flagged `key`.
    pub fn hot_loop(&self, info: &PluginInfo, key: &ObjectKey) {
        self.send(|| Activity::HotLoop {
            plugin: info.label(),
            parent: parent_of(info, key),
        });
    }

    /// The plugin source changed.
    pub fn plugin_event(&self, event: &PluginEvent<Plugin>) {
        let version = |p: &Plugin| {
            let sha = p.sha256();
            format!("{} ({})", p.label(), sha.get(..12).unwrap_or(sha))
        };
        self.send(|| match event {
            PluginEvent::Added { plugin, .. } => Activity::Loaded {
                plugin: version(plugin),
                kind: plugin.info().parent.kind.clone(),
            },
            PluginEvent::Replaced { old, new, .. } => Activity::Swapped {
                kind: new.info().parent.kind.clone(),
                from: version(old),
                to: version(new),
            },
            PluginEvent::Removed { plugin, .. } => Activity::Unloaded {
                plugin: plugin.label().to_owned(),
                kind: plugin.info().parent.kind.clone(),
            },
            PluginEvent::Refused { file, reason } => Activity::FileRefused {
                file: file.display().to_string(),
                reason: match reason {
                    FileRefusal::Invalid(why) => why.clone(),
                    FileRefusal::Conflict { kind, serving } => {
                        format!("{kind} is served by {}", serving.display())
                    }
                    unverified @ FileRefusal::Unverified { .. } => unverified.to_string(),
                },
            },
        });
    }
}

/// The manifest-hash annotation the host stamped on a desired manifest.
fn hash_of(manifest: &Value) -> Option<&str> {
    manifest["metadata"]["annotations"][MANIFEST_HASH_ANNOTATION].as_str()
}

/// The kind a child's remembered manifest is filed under: `Kind`, or `Kind@cluster` in a member
/// (the same name in two clusters is two children).
fn placed(kind: &str, cluster: Option<&str>) -> String {
    match cluster {
        Some(cluster) => format!("{kind}@{cluster}"),
        None => kind.to_owned(),
    }
}

/// Put back when the host last applied this very manifest (its hash is `last`): the plugin
/// wants what it wanted then, so the difference came from elsewhere.
fn drift(last: Option<&str>, manifest: &Value) -> Write {
    match (last, hash_of(manifest)) {
        (Some(l), Some(d)) if l == d => Write::PutBack,
        _ => Write::Updated,
    }
}

/// The path of the first field of `desired` that `live` does not hold (`spec.replicas`,
/// `spec.template.spec.containers[0].image`): the body first, then metadata, whose
/// manifest-hash annotation is left out (it changes with any change of the manifest).
pub fn differing_field(live: &DynamicObject, desired: &Value) -> Option<String> {
    let d = desired.as_object()?;
    let body = live.data.as_object();
    let null = Value::Null;
    for (k, dv) in d
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
    {
        let lv = body.and_then(|b| b.get(k)).unwrap_or(&null);
        if let Some(path) = first_difference(lv, dv, k.clone()) {
            return Some(path);
        }
    }
    let mut dm = d.get("metadata")?.clone();
    if let Some(a) = dm.get_mut("annotations").and_then(Value::as_object_mut) {
        a.remove(MANIFEST_HASH_ANNOTATION);
    }
    let lm = serde_json::to_value(&live.metadata).ok()?;
    first_difference(&lm, &dm, "metadata".into())
}

fn first_difference(live: &Value, desired: &Value, path: String) -> Option<String> {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d.iter().find_map(|(k, dv)| {
            let child = format!("{path}.{k}");
            match l.get(k) {
                Some(lv) => first_difference(lv, dv, child),
                None => (!dv.is_null()).then_some(child),
            }
        }),
        (Value::Array(l), Value::Array(d)) if l.len() == d.len() => l
            .iter()
            .zip(d)
            .enumerate()
            .find_map(|(i, (lv, dv))| first_difference(lv, dv, format!("{path}[{i}]"))),
        (l, d) => (!holds(l, d)).then_some(path),
    }
}

#[cfg(test)]
#[path = "activity_tests.rs"]
mod tests;
