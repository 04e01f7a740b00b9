//! `weir dev --watch` compiles with wasmtime's baseline compiler (Winch); production with the
//! optimizing one (Cranelift). Every language's component passes its fixtures under both with
//! the same report, and the sandbox holds the same: a spinning guest is stopped at its deadline.
//! The component a save's check compiled is the one the host then loads (one compile per save).

use crate::{built, guests, workspace};

use std::time::Duration;

use sha2::{Digest, Sha256};
use weir::offline;
use weir::plugin::{CallError, Engine, EngineConfig, Limits};

fn engine(baseline_compiler: bool) -> Engine {
    Engine::new(EngineConfig {
        baseline_compiler,
        ..EngineConfig::default()
    })
    .unwrap()
}

/// The fixture report of `component` run on `fixtures`.
fn report(engine: &Engine, component: &str, fixtures: &str) -> String {
    let plugin = engine
        .load_file(&built(component), Limits::default())
        .unwrap();
    let summary = offline::run_dir(&plugin, &workspace().join(fixtures)).unwrap();
    let mut out = Vec::new();
    summary.write_report(&mut out).unwrap();
    let report = String::from_utf8(out).unwrap();
    assert_eq!(summary.failed(), 0, "{component}: {report}");
    assert!(summary.passed() > 0, "{component}: no fixture ran");
    report
}

#[test]
fn every_language_passes_the_same_fixtures_under_the_development_and_the_production_compiler() {
    let (development, production) = (engine(true), engine(false));
    for (component, fixtures) in [
        ("blog.wasm", "plugins/blog/fixtures"),
        ("blog-py.wasm", "plugins/blog/fixtures"),
        ("blog-js.wasm", "plugins/blog/fixtures"),
        ("blog-c.wasm", "plugins/blog/fixtures"),
        (
            "metacontroller-example.wasm",
            "plugins/metacontroller-example/fixtures",
        ),
        (
            "metacontroller-example-js.wasm",
            "plugins/metacontroller-example/fixtures",
        ),
    ] {
        assert_eq!(
            report(&development, component, fixtures),
            report(&production, component, fixtures),
            "{component}"
        );
    }
}

#[test]
fn a_spinning_guest_is_stopped_at_its_deadline_under_the_baseline_compiler() {
    let timeout = Duration::from_millis(300);
    let limits = Limits {
        timeout,
        ..Limits::default()
    };
    let spinner = engine(true)
        .load_bytes(
            "spinner.wasm",
            &guests::component(guests::LOOP_FOREVER, 2),
            limits,
        )
        .unwrap();
    // Winch checks the epoch at function entries and loop heads as Cranelift does: the call
    // comes back (rather than spinning forever) with the sandbox's timeout.
    let err = spinner.reconcile(&guests::request("p")).unwrap_err();
    assert!(
        matches!(&err, CallError::Timeout { timeout: t, .. } if *t == timeout),
        "{err:?}"
    );
}

#[test]
fn the_host_loads_the_component_the_check_just_compiled_without_compiling_it_again() {
    // As in `weir dev --watch`: the baseline compiler and no cache directory.
    let engine = engine(true);
    let built = built("blog-py.wasm");
    let checked = engine.load_file(&built, Limits::default()).unwrap();
    let sha256 = hex::encode(Sha256::digest(std::fs::read(&built).unwrap()));
    assert_eq!(checked.sha256(), sha256);
    // A load trusting that digest reads the file only to compile it: a path that does not
    // exist loads, so the compile the check made was reused.
    let served = engine
        .load_verified(
            &workspace().join("target/no-such-copy.wasm"),
            &sha256,
            Limits::default(),
        )
        .unwrap();
    assert_eq!(served.info().name, checked.info().name);
    let other = engine.load_verified(
        &workspace().join("target/no-such-copy.wasm"),
        &"0".repeat(64),
        Limits::default(),
    );
    assert!(other.is_err(), "another digest is read from its file");
}
