//! `weir test` runs a plugin's `select` and resolves it against a fixture's `related` objects
//! through the host's own code: only what the host would pass reaches reconcile, refusals are
//! the host's, and `expect.selections` is checked.

use crate::{built, workspace};

use weir::offline::{Failure, run_dir};
use weir::plugin::{Engine, EngineConfig, Limits, Plugin};

fn related() -> Plugin {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    engine
        .load_file(&built("related.wasm"), Limits::default())
        .unwrap()
}

#[test]
fn related_fixtures_select_resolve_and_refuse_as_the_host_does() {
    let dir = workspace().join("tests/plugins/related/fixtures");
    let summary = run_dir(&related(), &dir).unwrap();
    let failures: Vec<_> = summary
        .cases
        .iter()
        .filter(|c| !c.passed())
        .map(|c| (c.file.clone(), c.failures.clone()))
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(summary.passed(), 5);
}

#[test]
fn a_wrong_expected_selection_or_an_unselected_object_fails_the_case() {
    let dir = tempfile::tempdir().unwrap();
    let case = |spec: &str, selections: &str, data: &str| {
        format!(
            "description: d\n\
             parent: {{apiVersion: test.weir.dev/v1, kind: Mirror, metadata: {{name: m, namespace: ns, uid: u}}, spec: {spec}}}\n\
             related: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: src, namespace: ns}}, data: {{k: v}}}}]\n\
             expect:\n  selections: {selections}\n  children: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: m-copy}}, data: {data}}}]\n"
        )
    };
    let wrong_selection = case(
        "{source: src, key: k}",
        "[{apiVersion: v1, kind: ConfigMap, selector: {name: other}}]",
        "{value: v}",
    );
    // The plugin selects `nope`, so the `src` the fixture holds must not reach it.
    let not_selected = case(
        "{source: nope, key: k}",
        "[{apiVersion: v1, kind: ConfigMap, selector: {name: nope}}]",
        "{value: v}",
    );
    std::fs::write(dir.path().join("01.yaml"), wrong_selection).unwrap();
    std::fs::write(dir.path().join("02.yaml"), not_selected).unwrap();
    let summary = run_dir(&related(), dir.path()).unwrap();
    let text = |i: usize| format!("{:?}", summary.cases[i].failures);
    assert!(
        matches!(summary.cases[0].failures.as_slice(), [Failure::Mismatch(t)] if t.contains("selections differ")),
        "{}",
        text(0)
    );
    assert!(
        matches!(summary.cases[1].failures.as_slice(),
            [Failure::Changed { changes, text }] if text.contains("children differ")
                && changes.iter().any(|c| c.name == "m-copy")),
        "{}",
        text(1)
    );
}
