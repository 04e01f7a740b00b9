//! `weir test` runs a real component against fixture files, prints diffs and
//! convergence failures, and sets its exit code accordingly.

use crate::workspace;

use std::process::Command;

/// Runs `weir test chaos.wasm tests/plugins/chaos/fixtures/<set>`.
fn weir_test(set: &str) -> (bool, String) {
    let wasm = workspace().join("target/plugins/chaos.wasm");
    assert!(
        wasm.exists(),
        "{} is missing: run plugins/build.sh first",
        wasm.display()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["--no-cache", "test"])
        .arg(&wasm)
        .arg(workspace().join("tests/plugins/chaos/fixtures").join(set))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (out.status.success(), stdout)
}

#[test]
fn fixtures_that_hold_pass_and_exit_zero() {
    let (ok, stdout) = weir_test("pass");
    assert!(ok, "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("chaos: 5 passed, 0 failed"),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        5,
        "{stdout}"
    );
}

#[test]
fn a_wrong_expected_value_fails_with_a_diff() {
    let (ok, stdout) = weir_test("broken");
    assert!(!ok, "{stdout}");
    assert!(
        stdout.contains("FAIL   01-wrong-data.yaml: Deliberately wrong expectation"),
        "{stdout}"
    );
    assert!(stdout.contains("children differ:"), "{stdout}");
    assert!(
        stdout.contains("-    mode: quiet") && stdout.contains("+    mode: ok"),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("chaos: 0 passed, 1 failed"),
        "{stdout}"
    );
}

#[test]
fn a_plugin_that_does_not_converge_is_reported_even_when_expectations_hold() {
    let (ok, stdout) = weir_test("non-convergent");
    assert!(!ok, "{stdout}");
    assert!(
        stdout.contains("NOT CONVERGENT 01-counter.yaml"),
        "{stdout}"
    );
    assert!(
        stdout.contains("-    observed: \"0\"") && stdout.contains("+    observed: \"1\""),
        "{stdout}"
    );
    assert!(
        !stdout.contains("children differ"),
        "the expectations themselves held: {stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("chaos: 0 passed, 1 failed"),
        "{stdout}"
    );
}
