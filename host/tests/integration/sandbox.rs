//! Each way a plugin can misbehave is stopped with its typed error within its
//! limit, and the host keeps serving good calls afterwards.

use crate::built;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::json;
use weir::plugin::{
    CallError, Contract, Engine, EngineConfig, ErrorKind, FinalizeRequest, FinalizeResponse,
    Limits, Plugin, ReconcileRequest, Requeue, ReusedInstance,
};

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::new(EngineConfig::default()).unwrap())
}

/// The chaos plugin under default limits, shared by the tests (as a host shares it).
fn chaos() -> &'static Plugin {
    static PLUGIN: OnceLock<Plugin> = OnceLock::new();
    PLUGIN.get_or_init(|| {
        engine()
            .load_file(&built("chaos.wasm"), Limits::default())
            .unwrap()
    })
}

fn request(name: &str, spec: serde_json::Value) -> ReconcileRequest {
    let parent = json!({
        "apiVersion": "test.weir.dev/v1",
        "kind": "Chaos",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": spec,
    });
    ReconcileRequest {
        clusters: Default::default(),
        parent: parent.to_string(),
        children: vec![],
        related: vec![],
    }
}

/// After any failure, the same loaded plugin must still answer a good call.
fn assert_next_good_call_succeeds(plugin: &Plugin) {
    let answer = plugin
        .reconcile(&request("after", json!({"mode": "ok"})))
        .unwrap();
    assert_eq!(answer.children.len(), 1);
    assert_eq!(answer.children[0]["metadata"]["name"], "after");
}

#[test]
fn describe_is_read_once_at_load() {
    let info = chaos().info();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("chaos", "0.1.0")
    );
    assert_eq!(info.parent.api_version(), "test.weir.dev/v1");
    assert_eq!(info.children[0].kind, "ConfigMap");
    assert_eq!(info.finalizer.as_deref(), Some("test.weir.dev/chaos"));
    assert_eq!(chaos().sha256().len(), 64);
    assert_eq!(chaos().label(), "chaos@0.1.0");
}

#[test]
fn a_good_call_returns_children_status_and_requeue() {
    let answer = chaos()
        .reconcile(&request("calm", json!({"mode": "ok"})))
        .unwrap();
    assert_eq!(
        answer.children,
        vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "calm"}, "data": {"mode": "ok"}})
        ]
    );
    assert_eq!(answer.status, Some(json!({"mode": "ok"})));
    assert_eq!(answer.requeue, Requeue::Done);
}

#[test]
fn an_infinite_loop_is_interrupted_at_its_deadline() {
    let timeout = Duration::from_millis(300);
    let plugin = engine()
        .load_file(
            &built("chaos.wasm"),
            Limits {
                timeout,
                ..Limits::default()
            },
        )
        .unwrap();
    let started = Instant::now();
    let err = plugin
        .reconcile(&request("spin", json!({"mode": "loop"})))
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(err, CallError::Timeout { timeout: t, .. } if t == timeout),
        "{err:?}"
    );
    assert!(
        took >= timeout - Duration::from_millis(20),
        "stopped early, after {took:?}"
    );
    assert!(
        took < timeout + Duration::from_millis(700),
        "stopped late, after {took:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Transient);
    assert_eq!(
        err.to_string(),
        "plugin chaos@0.1.0 did not answer within 300ms"
    );
    assert_next_good_call_succeeds(&plugin);
}

#[test]
fn a_memory_bomb_is_refused_memory_and_reported_out_of_memory() {
    let limit = 16 << 20;
    let plugin = engine()
        .load_file(
            &built("chaos.wasm"),
            Limits {
                memory: limit,
                ..Limits::default()
            },
        )
        .unwrap();
    let err = plugin
        .reconcile(&request("hog", json!({"mode": "memory"})))
        .unwrap_err();
    match &err {
        CallError::OutOfMemory {
            plugin,
            requested,
            limit: l,
        } => {
            assert_eq!(plugin, "chaos@0.1.0");
            assert_eq!(*l, limit);
            assert!(*requested > limit, "requested {requested}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert_next_good_call_succeeds(&plugin);
}

#[test]
fn a_panic_is_a_trap_naming_the_plugin() {
    let err = chaos()
        .reconcile(&request("crash", json!({"mode": "trap"})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Trap { plugin, .. } if plugin == "chaos@0.1.0"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(
            "plugin chaos@0.1.0 trapped: wasm trap: wasm `unreachable` instruction executed"
        ),
        "{text}"
    );
    assert!(
        text.contains("chaos: deliberate trap for crash"),
        "the panic message is kept: {text}"
    );
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert_next_good_call_succeeds(chaos());
}

#[test]
fn an_oversized_response_is_refused() {
    let err = chaos()
        .reconcile(&request("flood", json!({"mode": "oversized"})))
        .unwrap_err();
    match err {
        CallError::ResponseTooLarge {
            size, limit, exact, ..
        } => {
            // 8 MiB is past what the host copies out of a guest: refused
            // before it is copied, so the size is a lower bound.
            assert_eq!(limit, Limits::default().max_response_bytes);
            assert_eq!(size, Limits::default().host_copy_bytes());
            assert!(!exact && size > limit, "size {size}");
        }
        other => panic!("expected ResponseTooLarge, got {other:?}"),
    }
    let small = chaos()
        .reconcile(&request(
            "trickle",
            json!({"mode": "oversized", "bytes": 1000}),
        ))
        .unwrap();
    assert_eq!(
        small.children[0]["data"]["filler"].as_str().map(str::len),
        Some(1000)
    );
}

#[test]
fn invalid_json_is_an_invalid_response() {
    let err = chaos()
        .reconcile(&request("liar", json!({"mode": "invalid-json"})))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::InvalidResponse { reason, .. } if reason.starts_with("child #0: not JSON")),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert_next_good_call_succeeds(chaos());
}

#[test]
fn the_plugins_own_error_keeps_its_kind_and_message() {
    let spec = json!({"mode": "error", "errorKind": "transient", "message": "database not ready"});
    let err = chaos().reconcile(&request("waiting", spec)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transient);
    assert_eq!(err.to_string(), "plugin chaos@0.1.0: database not ready");
}

#[test]
fn a_0_1_0_finalize_answers_complete_or_again_after_and_carries_nothing_to_apply() {
    let finalize = |spec| {
        let req = request("going", spec);
        chaos().finalize(&FinalizeRequest {
            clusters: Default::default(),
            parent: req.parent,
            children: vec![],
            related: vec![],
            finalizer: "test.weir.dev/chaos".into(),
        })
    };
    assert_eq!(finalize(json!({})).unwrap(), FinalizeResponse::complete());
    let later = finalize(json!({"finalizeAfterMs": 250})).unwrap();
    assert_eq!(
        later,
        FinalizeResponse::again_after(Duration::from_millis(250))
    );
    assert!(!later.acts(), "children and status are left as they are");
}

#[test]
fn a_0_2_0_finalize_answers_as_it_did_and_carries_nothing_to_apply() {
    let plugin = engine()
        .load_file(&built("scenario-0.2.0.wasm"), Limits::default())
        .unwrap();
    assert_eq!(plugin.contract(), Contract::V0_2);
    let finalize = |spec| {
        let parent = json!({
            "apiVersion": "test.weir.dev/v1", "kind": "Scenario",
            "metadata": {"name": "going", "namespace": "default", "uid": "uid-going",
                "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["test.weir.dev/cleanup"]},
            "spec": spec,
        });
        let page = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "page", "namespace": "default"}});
        plugin
            .finalize(&FinalizeRequest {
                clusters: Default::default(),
                parent: parent.to_string(),
                children: vec![page.to_string()],
                related: vec![],
                finalizer: "test.weir.dev/cleanup".into(),
            })
            .unwrap()
    };
    let pending = finalize(json!({"configMaps": ["page"], "finalizeAfterMs": 100}));
    assert_eq!(
        pending,
        FinalizeResponse::again_after(Duration::from_millis(100))
    );
    assert!(!pending.acts(), "the child is left as it is, not pruned");
    let done = finalize(json!({"configMaps": ["page"], "finalizeAfterMs": 100, "release": true}));
    assert_eq!(done, FinalizeResponse::complete());
}

#[test]
fn a_runaway_call_does_not_hold_up_calls_on_other_threads() {
    let timeout = Duration::from_millis(800);
    let plugin = engine()
        .load_file(
            &built("chaos.wasm"),
            Limits {
                timeout,
                ..Limits::default()
            },
        )
        .unwrap();
    let spinner = {
        let plugin = plugin.clone();
        std::thread::spawn(move || plugin.reconcile(&request("spin", json!({"mode": "loop"}))))
    };
    let started = Instant::now();
    for i in 0..5 {
        let answer = chaos()
            .reconcile(&request(&format!("calm-{i}"), json!({"mode": "ok"})))
            .unwrap();
        assert_eq!(answer.requeue, Requeue::Done);
    }
    assert!(
        started.elapsed() < timeout,
        "good calls waited for the spinning one"
    );
    assert!(matches!(
        spinner.join().unwrap(),
        Err(CallError::Timeout { .. })
    ));
}

#[test]
fn a_reused_instance_answers_repeatedly_and_recovers_after_a_trap() {
    let mut instance = ReusedInstance::new(chaos().clone());
    for name in ["one", "two"] {
        let answer = instance
            .reconcile(&request(name, json!({"mode": "ok"})))
            .unwrap();
        assert_eq!(answer.children[0]["metadata"]["name"], name);
    }
    let err = instance
        .reconcile(&request("crash", json!({"mode": "trap"})))
        .unwrap_err();
    assert!(matches!(err, CallError::Trap { .. }), "{err:?}");
    let answer = instance
        .reconcile(&request("three", json!({"mode": "ok"})))
        .unwrap();
    assert_eq!(answer.children[0]["metadata"]["name"], "three");
}
