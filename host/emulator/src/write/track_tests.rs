//! Tests of an ordinary write's `managedFields`: the entries kept as stored, and what the
//! bookkeeping stores against the reference that reads and writes every entry again.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{looked_up_changes, track_update};
use crate::wire::fieldset::{self, Lookup, Path, Step, from_fields_v1};
use crate::write::apply::{self, Entry, Scope};

/// The bookkeeping as it was before entries were kept as stored: every entry read into a set,
/// every owned field of `new` looked up in both objects, every entry written out again. The
/// property tests hold [`track_update`] to this.
pub(crate) fn track_update_rebuilding_everything(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    scope: Scope,
    now: &str,
) {
    let sent = apply::listed(new);
    let reset = sent.is_some_and(Vec::is_empty);
    let requested = match scope {
        Scope::Main { .. } => apply::read_entries(new),
        Scope::Status => Vec::new(),
    };
    let mut entries = if reset {
        Vec::new()
    } else if requested.iter().any(|e| !e.fields.is_empty()) {
        requested
    } else {
        old.map(apply::read_entries).unwrap_or_default()
    };
    let changed = looked_up_changes(old, new, scope);
    let sub = scope.subresource();
    if !changed.is_empty() {
        for e in entries.iter_mut() {
            e.fields.retain(|p| !changed.contains(p));
        }
        let at = match entries
            .iter()
            .position(|e| e.same_owner(manager, "Update", sub))
        {
            Some(at) => at,
            None => {
                let api_version = apply::api_version_of(new);
                entries.push(Entry::new(manager, "Update", sub, &api_version, now));
                entries.len() - 1
            }
        };
        entries[at].fields.extend(changed);
        entries[at].time = now.to_string();
    }
    let lookup = Lookup::new(new);
    for e in entries.iter_mut() {
        e.prune(&lookup);
    }
    drop(lookup);
    let list = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(apply::written)
        .collect();
    apply::set_list(new, list);
}

/// Both bookkeepings of one write, which must store the same object; returns it.
fn both(old: Option<&Value>, new: &Value, manager: &str, scope: Scope) -> Value {
    let (mut kept, mut rebuilt) = (new.clone(), new.clone());
    track_update(old, &mut kept, manager, scope, "T1");
    track_update_rebuilding_everything(old, &mut rebuilt, manager, scope, "T1");
    assert_eq!(kept, rebuilt, "kept as stored, against every entry rebuilt");
    kept
}

fn pod(ready: &str, image: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "n", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": image}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]},
    })
}

/// The `managedFields` entry of `manager`, as stored.
fn entry_of<'a>(obj: &'a Value, manager: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["manager"] == manager))
        .unwrap_or(&Value::Null)
}

/// `obj` as its creation by the manager `weir` at time `T0` stores it.
fn created_by_weir(mut obj: Value, scope: Scope) -> Value {
    track_update(None, &mut obj, "weir", scope, "T0");
    obj
}

#[test]
fn a_status_write_keeps_the_other_managers_entries_as_stored_and_stamps_its_own() {
    let created = created_by_weir(pod("False", "x"), Scope::Main { has_status: true });
    // The kubelet's first status write, then its second.
    let mut first = created.clone();
    first["status"]["phase"] = json!("Pending");
    let first = both(Some(&created), &first, "kubelet", Scope::Status);
    let second = both(Some(&first), &pod("True", "x"), "kubelet", Scope::Status);
    assert_eq!(entry_of(&second, "weir"), entry_of(&created, "weir"));
    assert_eq!(entry_of(&second, "kubelet")["time"], "T1");
    let owned = fieldset::from_fields_v1(&entry_of(&second, "kubelet")["fieldsV1"]);
    assert!(owned.contains(&vec![
        Step::Field("status".into()),
        Step::Field("conditions".into()),
        Step::Key(r#"{"type":"Ready"}"#.into()),
        Step::Field("status".into()),
    ]));
}

#[test]
fn a_writer_changing_only_fields_it_holds_keeps_its_entry_and_takes_the_new_time() {
    let created = created_by_weir(pod("False", "x"), Scope::Main { has_status: true });
    let mut first = pod("True", "x");
    track_update(Some(&created), &mut first, "kubelet", Scope::Status, "T1");
    // The kubelet changes again only the condition its entry already holds.
    let second = pod("False", "x");
    let (mut kept, mut rebuilt) = (second.clone(), second);
    track_update(Some(&first), &mut kept, "kubelet", Scope::Status, "T2");
    track_update_rebuilding_everything(Some(&first), &mut rebuilt, "kubelet", Scope::Status, "T2");
    assert_eq!(kept, rebuilt, "kept as stored, against every entry rebuilt");
    let mine = entry_of(&kept, "kubelet");
    assert_eq!(mine["time"], "T2");
    assert_eq!(mine["fieldsV1"], entry_of(&first, "kubelet")["fieldsV1"]);
    assert_eq!(entry_of(&kept, "weir"), entry_of(&created, "weir"));
}

#[test]
fn an_entry_naming_a_field_the_write_removed_is_read_and_pruned() {
    let created = created_by_weir(pod("True", "x"), Scope::Main { has_status: false });
    let mut new = created.clone();
    new["metadata"]["labels"] = json!({});
    let out = both(
        Some(&created),
        &new,
        "other",
        Scope::Main { has_status: false },
    );
    let weir = fieldset::from_fields_v1(&entry_of(&out, "weir")["fieldsV1"]);
    let label = vec![
        Step::Field("metadata".into()),
        Step::Field("labels".into()),
        Step::Field("app".into()),
    ];
    assert!(!weir.contains(&label), "{weir:?}");
    assert!(!weir.is_empty());
}

#[test]
fn an_entry_not_written_as_this_crate_writes_entries_is_written_again() {
    let mut old = pod("True", "x");
    // As a client might send it: spaces in a key, `.` on a leaf, an unknown step, no operation.
    old["metadata"]["managedFields"] = json!([{
        "manager": "hand", "apiVersion": "v1", "time": "T", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:containers": {"k:{\"name\": \"app\"}": {".": {}, "f:image": {".": {}}}}},
                     "x:junk": {}},
    }]);
    let out = both(Some(&old), &pod("False", "x"), "kubelet", Scope::Status);
    let hand = entry_of(&out, "hand");
    assert_eq!(hand["operation"], "Update");
    assert_eq!(
        hand["fieldsV1"],
        json!({"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}})
    );
}

#[test]
fn a_keyed_list_holding_a_key_twice_is_tracked_as_every_field_looked_up() {
    let old = created_by_weir(pod("True", "x"), Scope::Main { has_status: false });
    let mut new = old.clone();
    new["spec"]["containers"] =
        json!([{"name": "app", "image": "y"}, {"name": "app", "image": "z", "tty": true}]);
    let out = both(Some(&old), &new, "other", Scope::Main { has_status: false });
    assert!(!entry_of(&out, "other").is_null());
}

#[test]
fn a_write_carrying_other_entries_starts_from_them() {
    let old = created_by_weir(pod("True", "x"), Scope::Main { has_status: false });
    let mut moved = pod("True", "y");
    moved["metadata"]["managedFields"] = json!([{"manager": "mine", "operation": "Apply", "apiVersion": "v1", "time": "T",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}}]);
    let out = both(
        Some(&old),
        &moved,
        "weir",
        Scope::Main { has_status: false },
    );
    assert_eq!(entry_of(&out, "mine")["operation"], "Apply");
    let mut reset = pod("True", "x");
    reset["metadata"]["managedFields"] = json!([]);
    let out = both(
        Some(&old),
        &reset,
        "weir",
        Scope::Main { has_status: false },
    );
    assert!(out["metadata"].get("managedFields").is_none(), "{out}");
}

/// A status of `n` conditions, `changed` of them False.
fn status(n: usize, changed: usize) -> Value {
    let conditions: Vec<Value> = (0..n)
        .map(|i| {
            let status = if i < changed { "False" } else { "True" };
            json!({"type": format!("Fake{i}"), "status": status, "reason": "Flood"})
        })
        .collect();
    json!({
        "apiVersion": "test.weir.dev/v1", "kind": "Attack",
        "metadata": {"name": "flood", "namespace": "n"},
        "status": {"conditions": conditions},
    })
}

/// The fields `manager`'s `Update` entry owns in `obj`.
fn owned_by(obj: &Value, manager: &str) -> Vec<Path> {
    let entries = obj["metadata"]["managedFields"].as_array().cloned();
    let entry = entries
        .unwrap_or_default()
        .into_iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_default();
    from_fields_v1(&entry["fieldsV1"]).into_iter().collect()
}

#[test]
fn tracking_a_status_write_of_two_thousand_conditions_takes_no_scan_per_field() {
    let now = "2026-12-02T00:00:00Z";
    let mut old = status(2_000, 0);
    track_update(None, &mut old, "weir", Scope::Status, now);
    // Another writer changes one condition's status: it owns that field only.
    let mut new = status(2_000, 1);
    new["metadata"]["managedFields"] = old["metadata"]["managedFields"].clone();
    let started = Instant::now();
    track_update(Some(&old), &mut new, "other", Scope::Status, now);
    // A scan of the list per field took tens of seconds here (the emulator's lock held all along).
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "tracking took {took:?}");
    let field = |name: &str| Step::Field(name.into());
    assert_eq!(
        owned_by(&new, "other"),
        [vec![
            field("status"),
            field("conditions"),
            Step::Key(r#"{"type":"Fake0"}"#.into()),
            field("status"),
        ]]
    );
    assert_eq!(
        owned_by(&new, "weir").len(),
        owned_by(&old, "weir").len() - 1
    );
}
