//! `weir dev --watch` on a `weir new` Rust project: a save that changes the ConfigMap's data
//! reaches the emulator; a save that fails a fixture is not served.
//!
//! The project builds in `target/scaffold` with the checkout's `Cargo.lock`, as
//! `guest-sdk/scaffold-test.sh` does: warm after that script, a build takes seconds.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the step that broke"
)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::dev::Dev;
use crate::workspace;

const FIXTURE: &str = "fixtures/01-new-object-gets-its-config-map.yaml";

fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{from:?} not in {}", file.display());
    std::fs::write(file, text.replacen(from, to, 1)).unwrap();
}

fn message(dev: &Dev) -> String {
    dev.kubectl(&[
        "get",
        "configmap",
        "hello",
        "-o",
        "jsonpath={.data.message}",
    ])
}

#[test]
fn weir_dev_watch_serves_each_save_of_a_rust_project_whose_fixtures_pass_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("hello-rust");
    let made = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["new", "--lang", "rust", "hello-rust", "--kind", "Greeting"])
        .args(["--group", "demo.example.dev", "--output"])
        .arg(&project)
        .arg("--sdk")
        .arg(workspace().join("guest-sdk"))
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    std::fs::copy(workspace().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();

    let mut dev = Dev::spawn(
        dir,
        &[
            "--plain".into(),
            "--watch".into(),
            project.clone().into(),
            "--apply".into(),
            project.join("examples").into(),
        ],
        &[("CARGO_TARGET_DIR", workspace().join("target/scaffold"))],
    );
    let long = Duration::from_secs(600);
    dev.expect_line_within(&["watch: fixtures pass (2)", "serving"], long);
    dev.expect_line(&[
        "Greeting default/hello: Ready=True",
        "1 children [ConfigMap/hello]",
    ]);
    assert_eq!(message(&dev), "Hello from Greeting");

    // The fixture's expectation and the reconciler, saved together: one build, served.
    edit(
        &project.join(FIXTURE),
        "      data:\n        message: Hello from Greeting\n",
        "      data:\n        message: Hello from Greeting!\n",
    );
    edit(
        &project.join("src/lib.rs"),
        "parent.spec.message.clone()",
        "format!(\"{}!\", parent.spec.message)",
    );
    let saved = Instant::now();
    dev.expect_line_within(&["watch: fixtures pass (2)", "serving"], long);
    dev.expect_line(&["swapped Greeting: hello-rust@0.1.0"]);
    dev.expect_line(&["updated ConfigMap default/hello (data.message) of Greeting default/hello"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while message(&dev) != "Hello from Greeting!" {
        assert!(
            Instant::now() < deadline,
            "the ConfigMap kept {:?}",
            message(&dev)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("save to cluster: {:.1} s", saved.elapsed().as_secs_f64());

    // A reconciler that no longer matches its fixture: shown, not served.
    edit(
        &project.join("src/lib.rs"),
        "format!(\"{}!\", parent.spec.message)",
        "format!(\"{}?\", parent.spec.message)",
    );
    dev.expect_line_within(
        &["watch: fixtures failed (1 passed, 1 failed): not swapped"],
        long,
    );
    dev.expect_line(&["+    message: Hello from Greeting?"]);
    std::thread::sleep(Duration::from_secs(1));
    let after = dev.drain();
    assert!(
        !after
            .iter()
            .any(|l| l.contains("swapped") || l.contains("serving")),
        "{after:?}"
    );
    assert_eq!(message(&dev), "Hello from Greeting!");
    dev.stop("-TERM");
}
