//! The deployment controller: one ReplicaSet per pod template, rollouts, history and status.
//!
//! As `pkg/controller/deployment` does: the ReplicaSet whose template equals the Deployment's
//! (ignoring `pod-template-hash`) is the new one; a missing one is created as
//! `NAME-HASH` with the next `deployment.kubernetes.io/revision`, and an old one becoming new
//! again (`kubectl rollout undo`) takes the next revision and records its old one in
//! `revision-history`. Simplified rollout: the new ReplicaSet is scaled to the full count at
//! once and the old ones to 0 when it is available (a 100% surge); ReplicaSets scaled to 0
//! beyond `revisionHistoryLimit` are deleted, oldest first. Status sums the ReplicaSets.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{condition, controller_ref, create, delete, res, update, write_status_of};
use crate::store::{ObjKey, Store};
use crate::wire::object;

const MANAGER: &str = "kube-controller-manager";
const HASH_LABEL: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX: &str = "deployment.kubernetes.io/max-replicas";

/// Annotations of a Deployment not copied to its ReplicaSets (`skipCopyAnnotation`).
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED,
    MAX,
    "deprecated.deployment.rollback.to",
];

/// What a pass reads of each ReplicaSet a Deployment controls (its revision, template, counts),
/// read without the rest of it: its `managedFields` (about half of its text) are skipped, not
/// parsed, and the whole object is read only for a ReplicaSet the pass writes. A Deployment keeps
/// up to `revisionHistoryLimit` old ReplicaSets, read on every pass, so this is most of a pass.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SetView {
    metadata: Option<SetMeta>,
    spec: Option<SetSpec>,
    status: Option<SetCounts>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SetMeta {
    annotations: Option<Value>,
    #[serde(rename = "ownerReferences")]
    owner_references: Option<Value>,
}

/// `spec`: its `template` is the one part of a ReplicaSet a pass compares whole.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SetSpec {
    replicas: Option<Value>,
    template: Option<Value>,
}

/// A ReplicaSet's counts; an absent or non-integer one is 0.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SetCounts {
    replicas: Option<Value>,
    #[serde(rename = "availableReplicas")]
    available_replicas: Option<Value>,
    #[serde(rename = "readyReplicas")]
    ready_replicas: Option<Value>,
}

/// An integer count, 0 when absent or not an integer (as [`int`] reads one).
fn count(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(0)
}

impl SetView {
    /// The view of a ReplicaSet already parsed (one this pass wrote).
    fn of(rs: &Value) -> SetView {
        SetView::deserialize(rs).unwrap_or_default()
    }

    fn revision(&self) -> i64 {
        revision_in(
            self.metadata
                .as_ref()
                .and_then(|m| m.annotations.as_ref())
                .and_then(Value::as_object),
        )
    }

    /// Whether its controller (the first owner reference with `controller: true`) has `uid`.
    fn controlled_by(&self, uid: &str) -> bool {
        self.metadata
            .as_ref()
            .and_then(|m| m.owner_references.as_ref())
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|r| r.get("controller") == Some(&Value::Bool(true)))
            .is_some_and(|r| r.get("uid").and_then(Value::as_str).unwrap_or("") == uid)
    }

    fn spec_replicas(&self) -> i64 {
        count(self.spec.as_ref().and_then(|s| s.replicas.as_ref()))
    }

    fn template(&self) -> Option<&Value> {
        self.spec.as_ref().and_then(|s| s.template.as_ref())
    }

    fn counts(&self) -> &SetCounts {
        static NONE: SetCounts = SetCounts {
            replicas: None,
            available_replicas: None,
            ready_replicas: None,
        };
        self.status.as_ref().unwrap_or(&NONE)
    }
}

/// The ReplicaSets `d` controls (by uid), each read as a [`SetView`].
fn controlled_sets(store: &Store, d: &Value) -> Vec<(ObjKey, SetView)> {
    let uid = object::uid(d);
    let rs_res = res("apps", "replicasets");
    store
        .dependents_of(uid)
        .into_iter()
        .filter(|k| k.res == rs_res)
        .filter_map(|k| {
            let view = store.stored(&k)?.read::<SetView>()?;
            Some((k, view))
        })
        .filter(|(_, rs)| rs.controlled_by(uid))
        .collect()
}

fn revision(rs: &Value) -> i64 {
    revision_in(
        rs.pointer("/metadata/annotations")
            .and_then(Value::as_object),
    )
}

/// The `deployment.kubernetes.io/revision` among `annotations`, 0 when none or not a number.
fn revision_in(annotations: Option<&Map<String, Value>>) -> i64 {
    annotations
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn int(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// A template without the `pod-template-hash` label (`EqualIgnoreHash`).
fn without_hash(template: Option<&Value>) -> Value {
    let mut t = template.cloned().unwrap_or(Value::Null);
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(HASH_LABEL);
        if labels.is_empty()
            && let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("labels");
        }
    }
    t
}

/// A template as `EqualIgnoreHash` compares it: without `pod-template-hash`, and with a null
/// field the same as a missing one (both decode to Go's zero value; kubectl 1.37's
/// `rollout undo` drops the `creationTimestamp: null` older releases sent).
fn comparable(template: Option<&Value>) -> Value {
    fn strip_nulls(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.retain(|_, f| !f.is_null());
                m.values_mut().for_each(strip_nulls);
            }
            Value::Array(items) => items.iter_mut().for_each(strip_nulls),
            _ => {}
        }
    }
    let mut t = without_hash(template);
    strip_nulls(&mut t);
    if let Some(m) = t.as_object_mut()
        && m.get("metadata")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        m.remove("metadata");
    }
    t
}

/// `ComputeHash`: FNV-1a (32 bit) of the template and collision count, its decimal digits
/// mapped onto the alphabet of `rand.SafeEncodeString`.
pub(super) fn template_hash(template: &Value, collisions: i64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let text = format!("{template}{collisions}");
    let hash = text.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    hash.to_string()
        .bytes()
        .map(|d| ALPHABET[usize::from(d) % ALPHABET.len()] as char)
        .collect()
}

/// `maxUnavailable`/`maxSurge` of a rolling update as a count (percentages of `replicas`,
/// rounded up for surge and down for unavailable, as `ResolveFenceposts`).
fn fencepost(d: &Value, field: &str, replicas: i64, round_up: bool) -> i64 {
    let v = d.pointer(&format!("/spec/strategy/rollingUpdate/{field}"));
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            let scaled = pct * replicas;
            if round_up {
                (scaled + 99) / 100
            } else {
                scaled / 100
            }
        }
        _ => 0,
    }
}

/// The ReplicaSet a Deployment at revision `revision` creates for its current template.
fn new_replica_set(d: &Value, template: &Value, replicas: i64, revision: i64) -> Value {
    let hash = template_hash(
        &without_hash(Some(template)),
        int(d, "/status/collisionCount"),
    );
    let mut template = template.clone();
    template["metadata"]["labels"][HASH_LABEL] = json!(hash);
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let mut rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", object::name(d)),
            "labels": template["metadata"]["labels"].clone(),
            "ownerReferences": controller_ref(d, "apps/v1", "Deployment"),
        },
        "spec": {"replicas": replicas, "selector": selector, "template": template},
    });
    if let Some(m) = d.pointer("/spec/minReadySeconds") {
        rs["spec"]["minReadySeconds"] = m.clone();
    }
    rs["metadata"]["annotations"] = json!(annotations(d, replicas, revision, None));
    rs
}

/// The annotations a Deployment gives its new ReplicaSet (`SetNewReplicaSetAnnotations`).
fn annotations(
    d: &Value,
    replicas: i64,
    revision: i64,
    old: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let mut out = old.cloned().unwrap_or_default();
    if let Some(own) = d
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    {
        for (k, v) in own {
            if !NOT_COPIED.contains(&k.as_str()) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    let previous = out.get(REVISION).and_then(Value::as_str).map(String::from);
    if let Some(prev) = previous.filter(|p| *p != revision.to_string()) {
        let history = match out.get(REVISION_HISTORY).and_then(Value::as_str) {
            Some(h) if !h.is_empty() => format!("{h},{prev}"),
            _ => prev,
        };
        out.insert(REVISION_HISTORY.into(), json!(history));
    }
    out.insert(REVISION.into(), json!(revision.to_string()));
    out.insert(DESIRED.into(), json!(replicas.to_string()));
    let surge = fencepost(d, "maxSurge", replicas, true);
    out.insert(MAX.into(), json!((replicas + surge).to_string()));
    out
}

/// Reconcile one Deployment. A ReplicaSet it creates is reconciled at once (its Pods created,
/// its status written: the replicaset controller's answer, in the same moment), so the
/// Deployment's first status counts them; its key goes into `also`.
pub(super) fn reconcile(store: &mut Store, key: &ObjKey, also: &mut Vec<ObjKey>) {
    let Some(d) = store.get(key) else { return };
    if object::is_deleting(&d) {
        return;
    }
    let replicas = d
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let Some(template) = d.pointer("/spec/template").cloned() else {
        return;
    };
    let rs_res = res("apps", "replicasets");
    let owned = controlled_sets(store, &d);
    let max_revision = owned.iter().map(|(_, rs)| rs.revision()).max().unwrap_or(0);
    let wanted = comparable(Some(&template));
    let current = owned
        .iter()
        .find(|(_, rs)| comparable(rs.template()) == wanted)
        .and_then(|(k, _)| Some((k.clone(), store.get(k)?)));
    let (new_key, new_rs) = match current {
        Some((k, rs)) => {
            // Scale it and, when it was an old one (a rollback), give it the next revision.
            let next = if revision(&rs) == max_revision {
                max_revision
            } else {
                max_revision + 1
            };
            let mut wanted_rs = rs.clone();
            wanted_rs["spec"]["replicas"] = json!(replicas);
            let old = rs
                .pointer("/metadata/annotations")
                .and_then(Value::as_object);
            wanted_rs["metadata"]["annotations"] = json!(annotations(&d, replicas, next, old));
            let now = update(store, &k, &rs, wanted_rs, false, MANAGER).unwrap_or(rs);
            (k, now)
        }
        None => {
            let body = new_replica_set(&d, &template, replicas, max_revision + 1);
            let Some(created) = create(store, &rs_res, &key.ns, body, MANAGER) else {
                return;
            };
            let k = ObjKey {
                res: rs_res.clone(),
                ns: key.ns.clone(),
                name: object::name(&created).to_string(),
            };
            super::replicaset::reconcile(store, &k);
            also.push(k.clone());
            let created = store.get(&k).unwrap_or(created);
            (k, created)
        }
    };
    let new_available = int(&new_rs, "/status/availableReplicas");
    // The old ReplicaSets as this pass leaves them: what it writes is what the store then holds
    // (the lock is held throughout), so they are not read again.
    let mut old_sets: Vec<(ObjKey, SetView)> =
        owned.into_iter().filter(|(k, _)| *k != new_key).collect();
    if new_available >= replicas {
        for (k, rs) in &mut old_sets {
            if rs.spec_replicas() != 0 {
                let Some(current) = store.get(k) else {
                    continue;
                };
                let mut scaled = current.clone();
                scaled["spec"]["replicas"] = json!(0);
                if let Some(a) = scaled
                    .pointer_mut("/metadata/annotations")
                    .and_then(Value::as_object_mut)
                {
                    a.insert(DESIRED.into(), json!(replicas.to_string()));
                }
                if let Some(stored) = update(store, k, &current, scaled, false, MANAGER) {
                    *rs = SetView::of(&stored);
                }
            }
        }
    }
    // cleanupDeployment: old ReplicaSets with no replicas beyond the history limit go.
    let limit = d
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
        .unwrap_or(10)
        .max(0) as usize;
    old_sets.sort_by_key(|(_, rs)| rs.revision());
    let idle: Vec<ObjKey> = old_sets
        .iter()
        .filter(|(_, rs)| rs.spec_replicas() == 0 && count(rs.counts().replicas.as_ref()) == 0)
        .map(|(k, _)| k.clone())
        .collect();
    for k in idle.iter().take(idle.len().saturating_sub(limit)) {
        delete(store, k);
    }
    // A ReplicaSet deleted just now is left out, as a fresh read leaves it out.
    old_sets.retain(|(k, _)| store.contains(k));
    let d = set_revision(store, key, d, &new_rs);
    let new_view = SetView::of(&new_rs);
    let sets: Vec<(i64, &SetCounts)> = std::iter::once(&new_view)
        .chain(old_sets.iter().map(|(_, rs)| rs))
        .map(|rs| (rs.spec_replicas(), rs.counts()))
        .collect();
    set_status(store, key, &d, replicas, &new_key.name, &sets);
}

/// The Deployment `d` (as stored at `key`) with its own `deployment.kubernetes.io/revision` set
/// to its new ReplicaSet's; returns it as stored.
fn set_revision(store: &mut Store, key: &ObjKey, d: Value, new_rs: &Value) -> Value {
    let wanted = json!(revision(new_rs).to_string());
    if d.pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        == Some(&wanted)
    {
        return d;
    }
    let mut updated = d.clone();
    if let Some(meta) = object::metadata_mut(&mut updated) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        annotations[REVISION] = wanted;
    }
    update(store, key, &d, updated, false, MANAGER).unwrap_or(d)
}

/// `calculateStatus` and `syncRolloutStatus`: counts summed over the ReplicaSets; `Available`
/// once `replicas - maxUnavailable` are available; `Progressing` with the new ReplicaSet.
/// `d` is the Deployment as stored at `key`; `sets` its ReplicaSets' `spec.replicas` and status
/// counts as stored, the new one's (`rs_name`) first.
fn set_status(
    store: &mut Store,
    key: &ObjKey,
    d: &Value,
    replicas: i64,
    rs_name: &str,
    sets: &[(i64, &SetCounts)],
) {
    let sum = |of: fn(&SetCounts) -> Option<&Value>| {
        sets.iter().map(|(_, rs)| count(of(rs))).sum::<i64>()
    };
    let total_spec = sets.iter().map(|(spec, _)| spec).sum::<i64>();
    let available = sum(|rs| rs.available_replicas.as_ref());
    let actual = sum(|rs| rs.replicas.as_ref());
    let updated = sets
        .first()
        .map_or(0, |(_, rs)| count(rs.replicas.as_ref()));
    let new_available = sets
        .first()
        .map_or(0, |(_, rs)| count(rs.available_replicas.as_ref()));
    let old_status = d.get("status");
    let max_unavailable = fencepost(d, "maxUnavailable", replicas, false);
    let minimum = available >= replicas - max_unavailable;
    let complete = updated == replicas && actual == replicas && new_available >= replicas;
    let progressing = if complete {
        condition(
            old_status,
            "Progressing",
            true,
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
        )
    } else {
        condition(
            old_status,
            "Progressing",
            true,
            "ReplicaSetUpdated",
            &format!("ReplicaSet \"{rs_name}\" is progressing."),
        )
    };
    let available_cond = if minimum {
        condition(
            old_status,
            "Available",
            true,
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        condition(
            old_status,
            "Available",
            false,
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    let with_update_time = |mut c: Value| {
        if c.get("lastUpdateTime").is_none() {
            c["lastUpdateTime"] = json!(object::now_rfc3339());
        }
        c
    };
    let mut status = json!({
        "observedGeneration": object::generation(d),
        "replicas": actual,
        "updatedReplicas": updated,
        "readyReplicas": sum(|rs| rs.ready_replicas.as_ref()),
        "availableReplicas": available,
        "conditions": [with_update_time(available_cond), with_update_time(progressing)],
    });
    let unavailable = total_spec.max(replicas) - available;
    if unavailable > 0 {
        status["unavailableReplicas"] = json!(unavailable);
    }
    if let Some(m) = status.as_object_mut() {
        m.retain(|_, v| *v != json!(0));
    }
    if let Some(c) = old_status.and_then(|s| s.get("collisionCount")) {
        status["collisionCount"] = c.clone();
    }
    write_status_of(store, key, d, status, MANAGER);
}
