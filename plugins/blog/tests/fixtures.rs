//! Every fixture in `fixtures/` holds natively, through the SDK harness (the component's JSON path).
//!
//! `weir test` checks the same files against the built component; this keeps
//! them honest under plain `cargo test`, without building WebAssembly.
//!
//! A fixture's `related` objects: `weir test` resolves the plugin's selection
//! against them with the host's own code; here the Blog gets every one in its
//! namespace and must pick its theme (by name) and posts (by labels) itself,
//! which it does anyway (README, *The posts*). `expect.selections` is checked
//! against `select`.

#![expect(
    clippy::unwrap_used,
    reason = "a test should stop loudly at the first unexpected error"
)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use weir_guest_sdk::testing::{self, Reconciled};
use weir_guest_sdk::{Child, Finalize, Requeue, Selection, Selector};
use weir_plugin_blog::BlogReconciler;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// JSON with null-valued object fields dropped, as the fixture format compares.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), without_nulls(v)))
            .collect(),
        Value::Array(items) => items.iter().map(without_nulls).collect(),
        other => other.clone(),
    }
}

fn key(object: &Value) -> (Value, Value, Value) {
    (
        object["apiVersion"].clone(),
        object["kind"].clone(),
        object["metadata"]["name"].clone(),
    )
}

fn sorted(children: impl Iterator<Item = Value>) -> Vec<Value> {
    let mut children: Vec<Value> = children.map(|c| without_nulls(&c)).collect();
    children.sort_by_key(|c| format!("{:?}", key(c)));
    children
}

fn requeue(requeue: Requeue) -> Value {
    match requeue {
        Requeue::Done => json!("done"),
        Requeue::Now => json!("now"),
        Requeue::After(delay) => json!({"after": delay.as_millis() as u64}),
    }
}

/// A selection as fixtures spell it (`namespace` only when set).
fn selection_json(selection: &Selection) -> Value {
    let selector = match &selection.selector {
        Selector::Name(name) => json!({"name": name}),
        Selector::Labels(labels) => json!({"labels": labels}),
    };
    let mut out =
        json!({"apiVersion": selection.api_version, "kind": selection.kind, "selector": selector});
    if let Some(ns) = &selection.namespace {
        out["namespace"] = json!(ns);
    }
    out
}

fn check_reconciled(name: &str, out: &Reconciled, expect: &Value) {
    if let Some(children) = expect.get("children") {
        let want = sorted(children.as_array().unwrap().iter().cloned());
        let have = sorted(out.children.iter());
        assert_eq!(have, want, "{name}: children");
    }
    if let Some(status) = expect.get("status") {
        assert_eq!(
            out.status
                .as_ref()
                .map(without_nulls)
                .unwrap_or(Value::Null),
            without_nulls(status),
            "{name}: status"
        );
    }
    if let Some(want) = expect.get("requeue") {
        assert_eq!(&requeue(out.requeue), want, "{name}: requeue");
    }
}

#[test]
fn every_fixture_holds_natively_and_converges() {
    let files = fixtures();
    assert!(
        files.len() >= 15,
        "expected the Blog fixtures, found {files:?}"
    );
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let case: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let parent = &case["parent"];
        let observed: Vec<Child> = case
            .get("observed")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(Child::json)
            .collect();
        let namespace = &parent["metadata"]["namespace"];
        let related: Vec<Child> = case
            .get("related")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|object| &object["metadata"]["namespace"] == namespace)
            .map(Child::json)
            .collect();
        let expect = &case["expect"];
        if let Some(want) = expect.get("selections") {
            let have: Vec<Value> = testing::select::<BlogReconciler>(parent)
                .unwrap()
                .iter()
                .map(selection_json)
                .collect();
            assert_eq!(&Value::Array(have), want, "{name}: selections");
        }
        if case.get("call").and_then(Value::as_str) == Some("finalize") {
            let got = testing::finalize::<BlogReconciler>(parent, observed).unwrap();
            assert_eq!(expect["finalize"], "complete", "{name}");
            assert_eq!(got, Finalize::Complete, "{name}");
            continue;
        }
        let result =
            testing::reconcile_with_related::<BlogReconciler>(parent, observed, related.clone());
        if let Some(error) = expect.get("error") {
            let err = result.expect_err(&name);
            assert_eq!(
                error["kind"],
                if err.is_transient() {
                    "transient"
                } else {
                    "permanent"
                },
                "{name}"
            );
            let needle = error["message_contains"].as_str().unwrap();
            assert!(
                err.message().contains(needle),
                "{name}: {err:?} lacks {needle:?}"
            );
            continue;
        }
        let out = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        check_reconciled(&name, &out, expect);
        // Convergence: the desired children, applied, ask for themselves again.
        let again =
            testing::reconcile_with_related::<BlogReconciler>(parent, out.as_observed(), related)
                .unwrap();
        assert_eq!(again.children, out.children, "{name}: not convergent");
    }
}
