//! The call deadline covers everything a guest can do: a guest sleeping in
//! the host (WASI) is stopped at the same deadline as a looping one, with the
//! same error; and a plugin's own error message is cut at the sandbox boundary.

use crate::guests;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::json;
use weir::plugin::{CallError, Engine, EngineConfig, ErrorKind, Limits, Plugin};

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::new(EngineConfig::default()).unwrap())
}

const TIMEOUT: Duration = Duration::from_millis(300);

fn load(name: &str, reconcile_body: &str) -> Plugin {
    let limits = Limits {
        timeout: TIMEOUT,
        ..Limits::default()
    };
    engine()
        .load_bytes(name, &guests::component(reconcile_body, 2), limits)
        .unwrap()
}

/// Calls `plugin` and checks it was stopped with `Timeout` at its deadline.
fn assert_stopped_at_the_deadline(plugin: &Plugin) {
    let started = Instant::now();
    let err = plugin.reconcile(&guests::request("p")).unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(&err, CallError::Timeout { plugin, timeout } if plugin == "wat@0.1.0" && *timeout == TIMEOUT),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Transient);
    assert_eq!(
        err.to_string(),
        "plugin wat@0.1.0 did not answer within 300ms"
    );
    assert!(
        took >= TIMEOUT - Duration::from_millis(20),
        "stopped early, after {took:?}"
    );
    assert!(
        took < TIMEOUT + Duration::from_millis(700),
        "stopped late, after {took:?}"
    );
}

#[test]
fn a_guest_sleeping_in_the_host_is_stopped_at_its_deadline() {
    let sleeper = load("sleeper.wasm", guests::SLEEP_TEN_SECONDS);
    assert_stopped_at_the_deadline(&sleeper);
    // The cancelled call left nothing behind: the next one is stopped the same way.
    assert_stopped_at_the_deadline(&sleeper);
}

#[test]
fn a_looping_guest_is_stopped_at_the_same_deadline_with_the_same_error() {
    let looper = load("looper.wasm", guests::LOOP_FOREVER);
    assert_stopped_at_the_deadline(&looper);
}

#[test]
fn sleeping_calls_on_many_threads_all_end_at_their_deadline() {
    let sleeper = load("sleeper.wasm", guests::SLEEP_TEN_SECONDS);
    let started = Instant::now();
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let sleeper = sleeper.clone();
            std::thread::spawn(move || sleeper.reconcile(&guests::request(&format!("p{i}"))))
        })
        .collect();
    for call in calls {
        assert!(matches!(
            call.join().unwrap(),
            Err(CallError::Timeout { .. })
        ));
    }
    let took = started.elapsed();
    assert!(took < TIMEOUT + Duration::from_millis(900), "took {took:?}");
}

#[test]
fn a_sleeping_call_from_inside_a_tokio_runtime_is_stopped_too() {
    let sleeper = load("sleeper.wasm", guests::SLEEP_TEN_SECONDS);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // A current-thread runtime blocked by the call cannot drive timers:
    // the deadline must not depend on it.
    let err = runtime.block_on(async { sleeper.reconcile(&guests::request("p")) });
    assert!(matches!(err, Err(CallError::Timeout { .. })), "{err:?}");
}

#[test]
fn a_huge_plugin_error_message_is_cut_at_the_sandbox_boundary() {
    let chaos = engine()
        .load_file(&crate::built("chaos.wasm"), Limits::default())
        .unwrap();
    let message = "é".repeat(1 << 19);
    let spec = json!({"mode": "error", "errorKind": "permanent", "message": message});
    let parent = json!({"apiVersion": "test.weir.dev/v1", "kind": "Chaos",
        "metadata": {"name": "loud", "namespace": "default"}, "spec": spec});
    let err = chaos
        .reconcile(&weir::plugin::ReconcileRequest {
            clusters: Default::default(),
            parent: parent.to_string(),
            children: vec![],
            related: vec![],
        })
        .unwrap_err();
    let CallError::Plugin {
        message: kept,
        kind,
        ..
    } = &err
    else {
        panic!("expected the plugin's error, got {err:?}");
    };
    assert_eq!(*kind, ErrorKind::Permanent);
    assert!(
        kept.len() <= Limits::default().max_error_bytes,
        "{}",
        kept.len()
    );
    let cut = (1 << 20) - kept.find('…').unwrap();
    assert!(
        kept.ends_with(&format!("… [truncated {cut} bytes]")),
        "{}",
        &kept[kept.len() - 40..]
    );
    assert!(kept.starts_with("éé"));
}
