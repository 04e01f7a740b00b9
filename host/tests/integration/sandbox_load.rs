//! Loading refuses what is not a reconciler with an error naming the file,
//! caches compiled code, and routes the guest's logs into the caller's span.

use crate::{LogText, built, guests};
use std::path::{Path, PathBuf};

use serde_json::json;
use weir::plugin::{Engine, EngineConfig, Limits, LoadError, ReconcileRequest};

fn engine() -> Engine {
    Engine::new(EngineConfig::default()).unwrap()
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let err = engine()
        .load_file(Path::new("/nonexistent/p.wasm"), Limits::default())
        .unwrap_err();
    assert!(matches!(err, LoadError::Io { .. }), "{err:?}");
    assert_eq!(err.to_string(), "cannot read plugin /nonexistent/p.wasm");
}

#[test]
fn bytes_that_are_not_a_component_are_refused_before_compiling() {
    let core_module = b"\0asm\x01\0\0\0";
    let err = engine()
        .load_bytes("core.wasm", core_module, Limits::default())
        .unwrap_err();
    assert!(matches!(err, LoadError::NotAComponent { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("core.wasm is not a WebAssembly component (a core WebAssembly module")
    );
    let err = engine()
        .load_bytes("notes.txt", b"hello", Limits::default())
        .unwrap_err();
    assert!(err.to_string().contains("no WebAssembly header"), "{err}");
}

#[test]
fn a_component_without_the_exports_is_the_wrong_contract() {
    let empty_component = b"\0asm\x0d\0\x01\0";
    let err = engine()
        .load_bytes("empty.wasm", empty_component, Limits::default())
        .unwrap_err();
    assert!(matches!(err, LoadError::WrongContract { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "plugin empty.wasm does not implement weir:reconciler@0.1.0 or 0.2.0 or 0.3.0 or 0.4.0: it does not export `describe`"
    );
}

#[test]
fn a_component_built_against_another_contract_version_is_refused_by_name() {
    let wit = guests::contract().replace(
        "package weir:reconciler@0.1.0;",
        "package weir:reconciler@0.5.0;",
    );
    let err = engine()
        .load_bytes(
            "future.wasm",
            &guests::dummy_component(&wit, "reconciler"),
            Limits::default(),
        )
        .unwrap_err();
    assert!(matches!(err, LoadError::WrongContract { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "plugin future.wasm does not implement weir:reconciler@0.1.0 or 0.2.0 or 0.3.0 or 0.4.0: built against weir:reconciler@0.5.0"
    );
}

#[test]
fn a_component_of_any_contract_version_is_linked_and_reaches_describe() {
    let wit = |version: &str| {
        std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(format!("../wit/{version}/reconciler.wit")),
        )
        .unwrap()
    };
    for (version, wit) in [
        ("0.1.0", guests::contract()),
        ("0.2.0", wit("0.2.0")),
        ("0.3.0", wit("0.3.0")),
        ("0.4.0", wit("0.4.0")),
    ] {
        let err = engine()
            .load_bytes(
                "dummy.wasm",
                &guests::dummy_component(&wit, "reconciler"),
                Limits::default(),
            )
            .unwrap_err();
        // Linked with its own version's bindings: the trap comes from the guest's describe.
        assert!(
            matches!(err, LoadError::Describe { .. }),
            "{version}: {err:?}"
        );
    }
}

#[test]
fn a_describe_that_traps_fails_the_load() {
    let err = engine()
        .load_bytes(
            "dummy.wasm",
            &guests::dummy_component(&guests::contract(), "reconciler"),
            Limits::default(),
        )
        .unwrap_err();
    assert!(matches!(err, LoadError::Describe { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("plugin dummy.wasm: describe() failed: plugin dummy.wasm trapped"),
        "{err}"
    );
}

#[test]
fn compiled_code_is_cached_and_reused_by_an_engine_with_the_same_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        cache_dir: Some(dir.path().to_path_buf()),
        ..EngineConfig::default()
    };
    let first = Engine::new(config.clone())
        .unwrap()
        .load_file(&built("chaos.wasm"), Limits::default())
        .unwrap();
    assert_eq!(
        artifacts(dir.path()).len(),
        1,
        "one compiled artifact is cached"
    );
    let second = Engine::new(config)
        .unwrap()
        .load_file(&built("chaos.wasm"), Limits::default())
        .unwrap();
    assert_eq!(
        artifacts(dir.path()).len(),
        1,
        "a second load compiled again"
    );
    assert_eq!(first.sha256(), second.sha256());
    let req = ReconcileRequest {
        clusters: Default::default(),
        parent: json!({"metadata": {"name": "c"}, "spec": {}}).to_string(),
        children: vec![],
        related: vec![],
    };
    assert_eq!(
        second.reconcile(&req).unwrap(),
        first.reconcile(&req).unwrap()
    );
}

/// Compiled code in the cache, leaving out the statistics and temporary
/// files wasmtime's cache worker writes in the background.
fn artifacts(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for path in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            found.extend(artifacts(&path));
        } else if !name.ends_with(".stats") && !name.contains(".wip") {
            found.push(path);
        }
    }
    found
}

#[test]
fn guest_logs_and_output_become_events_in_the_callers_span() {
    let plugin = engine()
        .load_file(&built("chaos.wasm"), Limits::default())
        .unwrap();
    let captured = LogText::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let _span = tracing::info_span!("reconcile", key = "default/loud").entered();
        let parent = json!({"metadata": {"name": "loud"}, "spec": {"mode": "log"}});
        plugin
            .reconcile(&ReconcileRequest {
                clusters: Default::default(),
                parent: parent.to_string(),
                children: vec![],
                related: vec![],
            })
            .unwrap();
    });
    let text = captured.text();
    for (level, message) in [
        ("TRACE", "chaos log at trace for loud"),
        ("DEBUG", "chaos log at debug for loud"),
        ("INFO", "chaos log at info for loud"),
        ("WARN", "chaos log at warn for loud"),
        ("ERROR", "chaos log at error for loud"),
        ("INFO", "chaos stdout for loud"),
        ("WARN", "chaos stderr for loud"),
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(message))
            .unwrap_or_else(|| panic!("no {message:?} in:\n{text}"));
        assert!(line.contains(level), "{line}");
        assert!(
            line.contains(r#"reconcile{key="default/loud"}"#),
            "not in the span: {line}"
        );
        assert!(
            line.contains(r#"plugin="chaos@0.1.0""#) || line.contains("plugin=chaos@0.1.0"),
            "{line}"
        );
    }
}

#[test]
fn a_call_from_spawn_blocking_in_a_tokio_runtime_can_use_wasi() {
    let plugin = engine()
        .load_file(&built("chaos.wasm"), Limits::default())
        .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let call = runtime.spawn_blocking(move || {
        let parent = json!({"metadata": {"name": "loud"}, "spec": {"mode": "log"}});
        plugin.reconcile(&ReconcileRequest {
            clusters: Default::default(),
            parent: parent.to_string(),
            children: vec![],
            related: vec![],
        })
    });
    let answer = runtime.block_on(call).unwrap().unwrap();
    assert_eq!(answer.status, Some(json!({"mode": "log"})));
}
