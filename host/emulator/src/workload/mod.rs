//! Workload simulation in the KWOK style: the controllers and the kubelet a cluster would run.
//!
//! Beside it, and not part of the optional simulation, `namespaces`: the namespace controller's
//! task, which every emulator runs (a deleted namespace's content is deleted, as in any cluster).
//! And what the simulated kubelet says of a container's log (`container_log`, served as
//! `pods/log`): a literal `echo`'s output (`echo`), else the container's lifecycle lines.
//!
//! One task follows the store's change stream and reconciles what each change touches, each
//! controller in its own module: `deployment` (Deployment → ReplicaSets, rollout and history,
//! status), `replicaset` (ReplicaSet → Pods), `job` (Job → Pods, Complete), `statefulset`
//! (ordered Pods), `daemonset` (one Pod per node), `kubelet` (Pods scheduled onto one fake
//! node, Running and Ready — or Succeeded, for a Pod whose `restartPolicy` is `Never` or
//! `OnFailure` — after [`WorkloadSimulation::ready_after`], with IPs; Pods due within
//! [`TOGETHER`] of each other turn Ready in one round, before the changes they make are heard,
//! so what they touch is written once) and
//! `endpoints` (Service → Endpoints and EndpointSlice from the Pods its selector matches);
//! `pods` is what they read of a Pod they only count or list. Every write goes through
//! [`crate::write::ops`], as a controller's request would, so watches, `managedFields` and
//! owner-reference garbage collection apply; a write happens only when something changed.
//!
//! A reconcile is not queued again by the changes it made itself (it left what it read as it
//! wrote it), nor a Pod's owner and Services by a Pod change they do not read (the kubelet's
//! Pending status): those passes would write nothing. A Deployment reconciles the ReplicaSet it
//! creates at once, so its first status already counts the new Pods.

pub mod container_log;
mod daemonset;
mod deployment;
mod echo;
mod endpoints;
mod job;
mod kubelet;
pub mod namespaces;
mod pods;
mod replicaset;
mod statefulset;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::TryRecvError;
use tokio::time::Instant;

use crate::kinds::resources::ResKey;
use crate::state::config::WorkloadSimulation;
use crate::state::shared::Shared;
use crate::store::{Event, EventType, ObjKey, Store};
use crate::wire::object;
use crate::wire::stored::{Meta, Stored};
use crate::write::opts::{Validation, WriteOpts};
use crate::write::{gc, ops};

/// The name of the one simulated node every Pod is scheduled onto.
const NODE: &str = "weir-node";
/// The simulated node's address.
const NODE_IP: &str = "172.18.0.2";

fn res(group: &str, plural: &str) -> ResKey {
    ResKey {
        group: group.into(),
        plural: plural.into(),
    }
}

/// How late a Pod may turn Ready so that it turns Ready together with the Pods due just before
/// it: their statuses then change in one moment, and their owners, Services and Endpoints are
/// written once for all of them, not once per Pod.
const TOGETHER: Duration = Duration::from_millis(50);

/// What the simulation keeps between reconciles: when each Pending Pod starts, the next Pod IP,
/// the keys due again, by the moment they are due, and which reconcile made the changes not yet
/// heard.
pub(crate) struct Sim {
    delay: Duration,
    starts: HashMap<ObjKey, (String, Instant)>,
    next_ip: u32,
    due: BTreeMap<Instant, BTreeSet<ObjKey>>,
    /// The resourceVersions each reconcile that wrote made, first and last, with its key and
    /// those of the objects it reconciled on the way, oldest first; dropped once the change
    /// stream is past them.
    own: VecDeque<(u64, u64, Vec<ObjKey>)>,
}

impl Sim {
    /// A simulation whose Pods are Ready `delay` after they are created.
    fn new(delay: Duration) -> Sim {
        Sim {
            delay,
            starts: HashMap::new(),
            next_ip: 0,
            due: BTreeMap::new(),
            own: VecDeque::new(),
        }
    }

    /// Reconcile `key` and note the changes it made, so that they do not queue it (or what it
    /// reconciled on the way) again.
    fn reconcile(&mut self, store: &mut Store, key: &ObjKey) {
        let before = store.current_rv();
        let mut keys = vec![key.clone()];
        reconcile(store, self, key, &mut keys);
        let after = store.current_rv();
        if after > before {
            self.own.push_back((before + 1, after, keys));
        }
    }

    /// The keys of the reconcile that made the change at `rv` (empty when none did): a reconcile
    /// leaves what it reads as it wrote it, so its own changes are nothing new to it. Changes are
    /// heard in order, so the reconciles before `rv` are forgotten.
    fn made_by(&mut self, rv: u64) -> &[ObjKey] {
        while self.own.front().is_some_and(|(_, last, _)| *last < rv) {
            self.own.pop_front();
        }
        self.own
            .front()
            .filter(|(first, _, _)| *first <= rv)
            .map_or(&[], |(_, _, keys)| keys.as_slice())
    }

    /// Has `key` reconciled again at `at` or up to [`TOGETHER`] after it, with the keys already
    /// due then; returns the moment it will be.
    fn wake_at(&mut self, key: ObjKey, at: Instant) -> Instant {
        let moment = match self.due.range(at..=at + TOGETHER).next() {
            Some((moment, _)) => *moment,
            None => at + TOGETHER,
        };
        self.due.entry(moment).or_default().insert(key);
        moment
    }

    /// The first moment keys are due, if any.
    fn next_due(&self) -> Option<Instant> {
        self.due.keys().next().copied()
    }

    /// Moves every key due by `now` into `queue`.
    fn take_due(&mut self, now: Instant, queue: &mut BTreeSet<ObjKey>) {
        while let Some(entry) = self.due.first_entry() {
            if *entry.key() > now {
                break;
            }
            queue.extend(entry.remove());
        }
    }

    /// The next Pod IP from 10.244.0.0/16 (the usual pod CIDR).
    fn pod_ip(&mut self) -> String {
        self.next_ip += 1;
        let n = self.next_ip % 65_000 + 2;
        format!("10.244.{}.{}", n / 256, n % 256)
    }
}

/// Write options of a controller named `manager`.
fn opts(manager: &str) -> WriteOpts {
    WriteOpts {
        manager: manager.into(),
        validation: Validation::Ignore,
        dry_run: false,
        force: false,
    }
}

/// Create `body` as `manager` in `ns`; `None` when refused (e.g. the namespace is terminating).
fn create(store: &mut Store, key: &ResKey, ns: &str, body: Value, manager: &str) -> Option<Value> {
    let rt = store
        .registry
        .find(&key.group, "v1", &key.plural)
        .cloned()?;
    match ops::create(store, &rt, ns, body, &opts(manager)) {
        Ok(out) => Some(out.object),
        Err(e) => {
            tracing::debug!(resource = %key.plural, namespace = ns, error = %e, "simulated create refused");
            None
        }
    }
}

/// Replace the object at `key` (its `/status` when `status`) with `body`, unless equal;
/// `current` is what the store holds (the lock is held from the caller's read to this write).
/// Returns the object as stored after the write, `None` when nothing was written.
fn update(
    store: &mut Store,
    key: &ObjKey,
    current: &Value,
    body: Value,
    status: bool,
    manager: &str,
) -> Option<Value> {
    if *current == body {
        return None;
    }
    let rt = store
        .registry
        .find(&key.res.group, "v1", &key.res.plural)
        .cloned()?;
    match ops::update_read(store, &rt, key, current, body, status, &opts(manager)) {
        Ok(out) => Some(out.object),
        Err(e) => {
            tracing::debug!(name = %key.name, namespace = %key.ns, error = %e, "simulated update refused");
            None
        }
    }
}

/// Write `status` onto the object at `key` unless it already has it.
fn write_status(store: &mut Store, key: &ObjKey, status: Value, manager: &str) {
    if let Some(current) = store.get(key) {
        write_status_of(store, key, &current, status, manager);
    }
}

/// [`write_status`] onto `current`, what the store holds at `key`.
fn write_status_of(store: &mut Store, key: &ObjKey, current: &Value, status: Value, manager: &str) {
    if current.get("status") == Some(&status) {
        return;
    }
    let Some(rt) = store
        .registry
        .find(&key.res.group, "v1", &key.res.plural)
        .cloned()
    else {
        return;
    };
    if let Err(e) = ops::update_status_read(store, &rt, key, current, status, &opts(manager)) {
        tracing::debug!(name = %key.name, namespace = %key.ns, error = %e, "simulated status update refused");
    }
}

/// Delete the object at `key` in the background, as a controller's delete request does.
fn delete(store: &mut Store, key: &ObjKey) {
    gc::delete(store, key, gc::Propagation::Background);
    gc::settle(store);
}

/// An owner reference naming `owner` (of `kind` in `api_version`) as the controller.
fn controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!([{"apiVersion": api_version, "kind": kind, "name": object::name(owner),
            "uid": object::uid(owner), "controller": true, "blockOwnerDeletion": true}])
}

/// The `(kind, name, uid)` of the object's controller, if any.
fn controller_of(obj: &Value) -> Option<(&str, &str, &str)> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))
        .map(|r| {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
            (s("kind"), s("name"), s("uid"))
        })
}

/// The objects of resource `of` that `owner` controls (by uid).
fn controlled(store: &Store, owner: &Value, of: &ResKey) -> Vec<(ObjKey, Value)> {
    controlled_as(store, owner, of, Stored::value)
}

/// [`controlled`], each object as `read` reads it from the store (one that keeps its owner
/// references, such as [`pods::summary`]).
fn controlled_as(
    store: &Store,
    owner: &Value,
    of: &ResKey,
    read: impl Fn(&Stored) -> Value,
) -> Vec<(ObjKey, Value)> {
    let uid = object::uid(owner);
    store
        .dependents_of(uid)
        .into_iter()
        .filter(|k| k.res == *of)
        .filter_map(|k| store.stored(&k).map(|o| (k, read(o))))
        .filter(|(_, o)| controller_of(o).is_some_and(|(_, _, u)| u == uid))
        .collect()
}

/// Whether a `LabelSelector` (`matchLabels`, `matchExpressions`) selects `labels`; an empty or
/// missing selector selects nothing, as for workloads and Services.
fn selects(selector: Option<&Value>, labels: Option<&Value>) -> bool {
    let Some(sel) = selector
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
    else {
        return false;
    };
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let match_labels = sel.get("matchLabels").and_then(Value::as_object);
    let exprs = sel.get("matchExpressions").and_then(Value::as_array);
    if match_labels.is_none() && exprs.is_none() {
        // A Service's selector is a plain map.
        return sel.iter().all(|(k, v)| get(k) == v.as_str());
    }
    let labels_ok = match_labels
        .into_iter()
        .flatten()
        .all(|(k, v)| get(k) == v.as_str());
    let exprs_ok = exprs.into_iter().flatten().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match e.get("operator").and_then(Value::as_str) {
            Some("In") => get(key).is_some_and(|v| values.contains(&v)),
            Some("NotIn") => get(key).is_none_or(|v| !values.contains(&v)),
            Some("Exists") => get(key).is_some(),
            Some("DoesNotExist") => get(key).is_none(),
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

/// Whether a Pod counts as active: not being deleted, not finished.
fn active(pod: &Value) -> bool {
    !object::is_deleting(pod)
        && !matches!(
            pod.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        )
}

/// Whether a Pod is Running with its Ready condition True.
fn ready(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
        && pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True"))
            })
}

/// A condition as controllers write them, keeping the transition time of an unchanged one.
fn condition(old: Option<&Value>, kind: &str, ok: bool, reason: &str, message: &str) -> Value {
    let now = object::now_rfc3339();
    let status = if ok { "True" } else { "False" };
    let previous = old
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("type") == Some(&json!(kind))));
    let mut c = json!({"type": kind, "status": status, "reason": reason, "message": message,
                       "lastTransitionTime": now});
    if let Some(p) = previous.filter(|p| p.get("status") == Some(&json!(status))) {
        c["lastTransitionTime"] = p.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
        if p.get("reason") == c.get("reason") && p.get("message") == c.get("message") {
            if let Some(t) = p.get("lastUpdateTime") {
                c["lastUpdateTime"] = t.clone();
            }
            if let Some(t) = p.get("lastProbeTime") {
                c["lastProbeTime"] = t.clone();
            }
        }
    }
    c
}

/// The keys a change makes worth reconciling: the object itself, its controller, and for a
/// Pod the Services selecting it (before or after the change), but not the reconcile that made
/// the change (`made_by`) unless the change removed an object (a StatefulSet deletes one Pod
/// at a time). A Pod's controller and Services hear only of a change to what they read of it
/// ([`pods::Counted`]). Only labels and owners are read, and of a changed Pod what counts.
fn touched(store: &Store, ev: &Event, made_by: &[ObjKey], out: &mut BTreeSet<ObjKey>) {
    let key = &ev.key;
    if !WATCHED
        .iter()
        .any(|(g, p)| key.res.group == *g && key.res.plural == *p)
    {
        return;
    }
    let made_by = if ev.kind == EventType::Deleted {
        &[]
    } else {
        made_by
    };
    let mut insert = |k: ObjKey| {
        if !made_by.contains(&k) {
            out.insert(k);
        }
    };
    insert(key.clone());
    let is_pod = key.res == res("", "pods");
    if is_pod
        && ev.kind == EventType::Modified
        && let Some(prev) = &ev.prev
        && pods::counted(prev) == pods::counted(&ev.object)
    {
        return;
    }
    let object = ev.object.meta();
    let prev = ev.prev.as_ref().map(|p| p.meta());
    for meta in std::iter::once(&object).chain(prev.as_ref()) {
        if let Some((kind, name)) = meta.controller() {
            let owner = match kind {
                "ReplicaSet" => res("apps", "replicasets"),
                "Deployment" => res("apps", "deployments"),
                "StatefulSet" => res("apps", "statefulsets"),
                "DaemonSet" => res("apps", "daemonsets"),
                "Job" => res("batch", "jobs"),
                _ => continue,
            };
            insert(ObjKey {
                res: owner,
                ns: key.ns.clone(),
                name: name.to_string(),
            });
        }
    }
    if is_pod {
        let index = store.labels();
        let mut names = index.services_for(&key.ns, object.labels_map());
        if let Some(prev) = &prev {
            names.extend(index.services_for(&key.ns, prev.labels_map()));
        }
        for name in names {
            let svc_key = ObjKey {
                res: res("", "services"),
                ns: key.ns.clone(),
                name,
            };
            let Some(svc) = store.get(&svc_key) else {
                continue;
            };
            let sel = svc.pointer("/spec/selector");
            let selected = |m: &Meta| selects(sel, m.labels.as_ref());
            if selected(&object) || prev.as_ref().is_some_and(selected) {
                insert(svc_key);
            }
        }
    }
}

/// The resources the simulation reacts to.
const WATCHED: [(&str, &str); 7] = [
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("", "pods"),
    ("", "services"),
];

/// Reconcile one object with the controller its resource belongs to; `also` gets the keys of
/// the objects reconciled on the way (a Deployment's new ReplicaSet).
fn reconcile(store: &mut Store, sim: &mut Sim, key: &ObjKey, also: &mut Vec<ObjKey>) {
    match (key.res.group.as_str(), key.res.plural.as_str()) {
        ("apps", "deployments") => deployment::reconcile(store, key, also),
        ("apps", "replicasets") => replicaset::reconcile(store, key),
        ("apps", "statefulsets") => statefulset::reconcile(store, key),
        ("apps", "daemonsets") => daemonset::reconcile(store, key),
        ("batch", "jobs") => job::reconcile(store, key),
        ("", "pods") => kubelet::reconcile(store, sim, key),
        ("", "services") => endpoints::reconcile(store, key),
        _ => {}
    }
}

/// How many reconciles the loop works through before it takes the changes waiting again.
const DRAIN_EVERY: usize = 64;

/// The longest run of reconciles under one hold of the store's lock.
const HOLD: Duration = Duration::from_millis(2);

/// Every object the simulation reconciles.
fn everything(store: &Store) -> BTreeSet<ObjKey> {
    WATCHED
        .iter()
        .flat_map(|(g, p)| store.keys(&res(g, p)))
        .collect()
}

/// Takes every change already waiting into `queue`, so one reconcile covers a burst, under one
/// hold of the store's lock (not one per change: the requests the emulator serves meanwhile
/// wait on it either way, and each hand-over costs both sides a wake-up). If the change stream
/// dropped changes the loop had not taken, every object is queued again. Returns false once the
/// store is gone.
fn drain(
    shared: &Shared,
    sim: &mut Sim,
    rx: &mut tokio::sync::broadcast::Receiver<Arc<Event>>,
    queue: &mut BTreeSet<ObjKey>,
) -> bool {
    let mut store = None;
    loop {
        let ev = match rx.try_recv() {
            Ok(ev) => ev,
            Err(TryRecvError::Lagged(missed)) => {
                lagged(store.get_or_insert_with(|| shared.lock()), missed, queue);
                continue;
            }
            Err(TryRecvError::Empty) => return true,
            Err(TryRecvError::Closed) => return false,
        };
        hear(store.get_or_insert_with(|| shared.lock()), sim, &ev, queue);
    }
}

/// Queues what the change `ev` makes worth reconciling ([`touched`]).
fn hear(store: &Store, sim: &mut Sim, ev: &Event, queue: &mut BTreeSet<ObjKey>) {
    let made_by = sim.made_by(ev.rv);
    touched(store, ev, made_by, queue);
}

/// The change stream dropped `missed` changes: every object is queued again.
fn lagged(store: &Store, missed: u64, queue: &mut BTreeSet<ObjKey>) {
    let all = everything(store);
    tracing::warn!(
        missed,
        objects = all.len(),
        "the workload simulation fell behind the change stream; reconciling every workload object"
    );
    queue.extend(all);
}

/// Run the simulation until the emulator stops.
pub async fn run(shared: Arc<Shared>, config: WorkloadSimulation) {
    let mut sim = Sim::new(config.ready_after);
    let (mut rx, mut queue) = {
        let store = shared.lock();
        (store.subscribe(), everything(&store))
    };
    loop {
        while !queue.is_empty() {
            // Reconciles in runs under one hold of the lock, each run at most `DRAIN_EVERY` keys
            // or `HOLD` long, so requests wait no longer than that, and the lock changes hands
            // once per run, not once per key.
            {
                let mut store = shared.lock();
                let began = std::time::Instant::now();
                for _ in 0..DRAIN_EVERY {
                    let Some(key) = queue.pop_first() else {
                        break;
                    };
                    sim.reconcile(&mut store, &key);
                    if began.elapsed() >= HOLD {
                        break;
                    }
                }
            }
            // A long queue is worked through hearing the changes as they come: a change stream
            // left to fill up drops changes, and then costs a pass over every object.
            if !drain(&shared, &mut sim, &mut rx, &mut queue) {
                return;
            }
        }
        let next_due = sim.next_due();
        tokio::select! {
            ev = rx.recv() => match ev {
                Ok(ev) => hear(&shared.lock(), &mut sim, &ev, &mut queue),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    lagged(&shared.lock(), missed, &mut queue);
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            () = tokio::time::sleep_until(next_due.unwrap_or_else(Instant::now)), if next_due.is_some() => {}
        }
        // Everything due now goes in one round: Pods that turn Ready together are reconciled
        // before the changes they make are heard, so their owners are written once for all.
        sim.take_due(Instant::now(), &mut queue);
        if !drain(&shared, &mut sim, &mut rx, &mut queue) {
            return;
        }
    }
}
