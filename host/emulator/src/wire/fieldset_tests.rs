//! Tests of field paths and sets: `fieldsV1` round trips, lookups, removal.

use super::*;
use serde_json::json;

#[test]
fn keyed_lists_round_trip_through_fields_v1() {
    let obj = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "app", "image": "x"}]}}}});
    let set = fields_of(&obj);
    let v1 = to_fields_v1(&set);
    assert_eq!(
        v1["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"]["."],
        json!({})
    );
    assert_eq!(from_fields_v1(&v1), set);
}

#[test]
fn the_fields_under_one_field_are_those_of_the_whole_object_there() {
    let obj = json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "x"}], "finalizers": ["a"]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                   "podIPs": [{"ip": "10.0.0.1"}], "empty": {}}
    });
    for field in ["status", "spec", "metadata", "absent"] {
        let whole: BTreeSet<Path> = fields_of(&obj)
            .into_iter()
            .filter(|p| p.first() == Some(&Step::Field(field.into())))
            .collect();
        assert_eq!(fields_under(&obj, field), whole, "{field}");
    }
    assert!(!fields_under(&obj, "status").is_empty());
}

/// The value at `path` found by scanning each list, as every lookup did before [`Lookup`].
fn scanned<'a>(obj: &'a Value, path: &[Step]) -> Option<&'a Value> {
    let mut cur = obj;
    for step in path {
        cur = match (step, cur) {
            (Step::Field(f), Value::Object(m)) => m.get(f)?,
            (_, Value::Array(items)) => &items[find_in_list(items, step)?],
            _ => return None,
        };
    }
    Some(cur)
}

#[test]
fn a_lookup_finds_what_a_scan_of_each_list_finds() {
    let mut conditions: Vec<Value> = (0..300)
        .map(|i| json!({"type": format!("T{i}"), "status": "True"}))
        .collect();
    // A second element with a key already seen: both find the first.
    conditions.push(json!({"type": "T7", "status": "Again"}));
    let obj = json!({
        "status": {"conditions": conditions},
        "spec": {
            "ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}],
            "finalizers": ["a", "b"],
        },
    });
    let lookup = Lookup::new(&obj);
    let paths = fields_of(&obj);
    assert!(paths.len() > 900, "{}", paths.len());
    for path in &paths {
        assert_eq!(lookup.value_at(path), scanned(&obj, path), "{path:?}");
    }
    let t7 = [
        Step::Field("status".into()),
        Step::Field("conditions".into()),
        Step::Key(r#"{"type":"T7"}"#.into()),
        Step::Field("status".into()),
    ];
    assert_eq!(lookup.value_at(&t7), Some(&json!("True")));
    let tcp = [
        Step::Field("spec".into()),
        Step::Field("ports".into()),
        Step::Key(r#"{"port":80,"protocol":"TCP"}"#.into()),
    ];
    assert_eq!(lookup.value_at(&tcp), Some(&json!({"port": 80})));
    let absent = [
        Step::Field("status".into()),
        Step::Field("conditions".into()),
        Step::Key(r#"{"type":"T300"}"#.into()),
    ];
    assert_eq!(lookup.value_at(&absent), None);
}

#[test]
fn removing_the_last_key_removes_the_emptied_map() {
    let mut obj = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}});
    remove_at(
        &mut obj,
        &[
            Step::Field("metadata".into()),
            Step::Field("labels".into()),
            Step::Field("a".into()),
        ],
    );
    assert_eq!(obj, json!({"metadata": {}, "spec": {"x": 1}}));
}
