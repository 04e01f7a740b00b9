use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Scope, track_update};
use crate::wire::fieldset::{Path, Step, from_fields_v1};

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
