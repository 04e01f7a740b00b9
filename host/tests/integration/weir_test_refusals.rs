//! `weir test` runs the host's answer validation: an answer that meets the fixture's own
//! expectations but that the host would refuse fails, with the host's refusal message.

use crate::workspace;
use std::path::{Path, PathBuf};

use serde_json::json;
use weir::answer::{MAX_CHILDREN, MAX_STATUS_BYTES, Refusal, ValidationPolicy, refusal_message};
use weir::offline::{Failure, Summary, run_dir, run_dir_with};
use weir::plugin::{Engine, EngineConfig, Limits, Plugin, PluginInfo};

fn chaos() -> Plugin {
    let wasm = workspace().join("target/plugins/chaos.wasm");
    assert!(
        wasm.exists(),
        "{} is missing: run plugins/build.sh first",
        wasm.display()
    );
    let engine = Engine::new(EngineConfig::default()).unwrap();
    engine.load_file(&wasm, Limits::default()).unwrap()
}

fn refused_dir() -> PathBuf {
    workspace().join("tests/plugins/chaos/fixtures-refused")
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

fn report(summary: &Summary) -> String {
    let mut out = Vec::new();
    summary.write_report(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The refusal the host would give for each case, built from the host's own types.
fn expected_refusals(info: &PluginInfo) -> Vec<(&'static str, String)> {
    let cm = |name: &str| ("ConfigMap".to_owned(), name.to_owned());
    let huge = json!({"mode": "huge-status", "filler": "x".repeat(2 << 20)});
    let refusals = [
        ("01-elsewhere.yaml", {
            let (kind, name) = cm("elsewhere");
            Refusal::Namespace {
                kind,
                name,
                wanted: "kube-system".into(),
                parent: "default".into(),
            }
        }),
        ("02-duplicate.yaml", {
            let (kind, name) = cm("twice");
            Refusal::Duplicate { kind, name }
        }),
        ("03-invalid-name.yaml", {
            let (kind, name) = cm("badname_Not_A_Name");
            Refusal::InvalidName { kind, name }
        }),
        (
            "04-too-many.yaml",
            Refusal::TooLarge {
                what: format!("{} children", MAX_CHILDREN + 1),
                limit: MAX_CHILDREN,
            },
        ),
        ("05-finalizers.yaml", {
            let (kind, name) = cm("sticky");
            Refusal::Finalizers {
                kind,
                name,
                finalizers: r#"["test.weir.dev/keep"]"#.into(),
            }
        }),
        (
            "06-service-account-token.yaml",
            Refusal::SecretType {
                name: "minted".into(),
                secret_type: "kubernetes.io/service-account-token".into(),
            },
        ),
        (
            "07-huge-status.yaml",
            Refusal::StatusTooLarge {
                size: huge.to_string().len(),
                limit: MAX_STATUS_BYTES,
            },
        ),
        ("08-adopt-foreign.yaml", {
            let (kind, name) = cm("foreign");
            Refusal::Foreign {
                kind,
                namespace: "default".into(),
                name,
                owner: "controlled by uid-someone-else".into(),
            }
        }),
    ];
    refusals
        .into_iter()
        .map(|(file, r)| (file, refusal_message(info, &r)))
        .collect()
}

#[test]
fn answers_the_host_would_refuse_fail_with_the_hosts_message_although_their_expectations_hold() {
    let plugin = chaos();
    let summary = run_dir(&plugin, &refused_dir()).unwrap();
    let expected = expected_refusals(plugin.info());
    let files: Vec<String> = summary.cases.iter().map(|c| file_name(&c.file)).collect();
    assert_eq!(
        files,
        expected
            .iter()
            .map(|(f, _)| f.to_string())
            .collect::<Vec<_>>()
    );
    for (case, (file, message)) in summary.cases.iter().zip(&expected) {
        assert_eq!(
            case.failures,
            vec![Failure::Refused(message.clone())],
            "{file}: only the refusal fails, the expectations hold"
        );
    }
    let text = report(&summary);
    for (file, message) in &expected {
        assert!(text.contains(&format!("REFUSED {file}")), "{text}");
        assert!(text.contains(&format!("       {message}\n")), "{text}");
    }
    assert_eq!(
        text.lines().last(),
        Some("chaos: 0 passed, 8 failed"),
        "{text}"
    );
}

#[test]
fn a_fixture_may_expect_the_refusal() {
    let summary = run_dir(&chaos(), &refused_dir().join("asserted")).unwrap();
    let text = report(&summary);
    assert_eq!(summary.cases.len(), 3, "{text}");
    assert_eq!(summary.failed(), 0, "{text}");
}

#[test]
fn the_policy_decides_whether_a_service_account_token_is_refused() {
    let dir = tempdir("token");
    std::fs::copy(
        refused_dir().join("06-service-account-token.yaml"),
        dir.join("01-token.yaml"),
    )
    .unwrap();
    let plugin = chaos();
    let strict = run_dir(&plugin, &dir).unwrap();
    assert_eq!(strict.failed(), 1, "{}", report(&strict));
    let mut lenient = ValidationPolicy::default();
    lenient
        .secret_types
        .push("kubernetes.io/service-account-token".into());
    let allowed = run_dir_with(&plugin, &dir, &lenient).unwrap();
    assert_eq!(allowed.failed(), 0, "{}", report(&allowed));
}

#[test]
fn expecting_a_refusal_of_an_answer_the_host_accepts_fails() {
    let dir = tempdir("accepted");
    std::fs::write(
        dir.join("01-ok.yaml"),
        "description: ok is not refused\n\
         parent: {apiVersion: test.weir.dev/v1, kind: Chaos, \
         metadata: {name: calm, namespace: default, uid: u}, spec: {mode: ok}}\n\
         expect: {error: {refused: true}}\n",
    )
    .unwrap();
    let summary = run_dir(&chaos(), &dir).unwrap();
    let failures = &summary.cases[0].failures;
    assert!(
        matches!(failures.as_slice(), [Failure::Mismatch(m)]
            if m.starts_with("expected the host to refuse the answer, but reconcile succeeded")),
        "{failures:?}"
    );
}

#[test]
fn the_blog_fixtures_pass_the_hosts_validation() {
    let wasm = workspace().join("target/plugins/blog.wasm");
    assert!(
        wasm.exists(),
        "{} is missing: run plugins/build.sh first",
        wasm.display()
    );
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let blog = engine.load_file(&wasm, Limits::default()).unwrap();
    let summary = run_dir(&blog, &workspace().join("plugins/blog/fixtures")).unwrap();
    assert_eq!(summary.failed(), 0, "{}", report(&summary));
    assert!(summary.passed() > 0);
}

/// A fresh directory of this test's own under the system's temporary directory.
fn tempdir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("weir-test-refusals-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
