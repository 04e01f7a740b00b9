//! The production build (`--no-default-features`, as `deploy/Dockerfile` builds it) leaves out
//! the `dev` feature, and with it the embedded API emulator.

use std::process::Command;

/// The crates `cargo tree` lists as normal (non-dev, non-build) dependencies of `weir`.
fn normal_dependencies(features: &[&str]) -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-p",
            "weir",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(features)
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo tree: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(String::from)
        .collect()
}

#[test]
fn weir_without_default_features_does_not_depend_on_the_emulator() {
    let crates = normal_dependencies(&["--no-default-features"]);
    assert!(
        crates.iter().any(|c| c == "weir"),
        "cargo tree listed {crates:?}"
    );
    assert!(
        !crates.iter().any(|c| c == "weir-emulator"),
        "weir-emulator is a normal dependency of weir without the `dev` feature"
    );
}

#[test]
fn weir_with_default_features_includes_the_emulator_for_weir_dev() {
    let crates = normal_dependencies(&[]);
    assert!(
        crates.iter().any(|c| c == "weir-emulator"),
        "the default build lost `weir dev` and `weir emulator`: {crates:?}"
    );
}
