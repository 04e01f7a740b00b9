//! A misbehaving plugin for the sandbox tests.
//!
//! The parent's `spec.mode` picks the misbehaviour, so one component covers
//! every failure the sandbox must contain:
//!
//! | `spec.mode`     | what `reconcile` does                                        |
//! |-----------------|--------------------------------------------------------------|
//! | `ok`            | one ConfigMap named after the parent, status `{mode: ok}`    |
//! | `loop`          | spins forever (the epoch deadline must stop it)              |
//! | `memory`        | allocates and touches memory until allocation fails          |
//! | `trap`          | panics (an `unreachable` trap under `panic = "abort"`)       |
//! | `oversized`     | returns a child of `spec.bytes` bytes (default 8 MiB)        |
//! | `invalid-json`  | returns a child that is not JSON                             |
//! | `counter`       | a ConfigMap holding the number of observed children: never converges |
//! | `error`         | fails with `spec.errorKind` (`transient`/`permanent`) and `spec.message` |
//! | `log`           | logs at every level and writes to stdout and stderr, then `ok` |
//!
//! Modes whose answer the sandbox accepts but the host's validation refuses
//! (fixtures in `fixtures-refused/`); each answers status `{mode: <mode>}`:
//!
//! | `spec.mode`     | what `reconcile` asks for                                    |
//! |-----------------|--------------------------------------------------------------|
//! | `elsewhere`     | the ConfigMap in `spec.namespace` (default `kube-system`)    |
//! | `duplicate`     | the same ConfigMap twice                                     |
//! | `invalid-name`  | a ConfigMap named `<name>_Not_A_Name`                        |
//! | `many`          | `spec.count` ConfigMaps `<name>-<i>` (default 257)           |
//! | `finalizers`    | the ConfigMap with finalizer `test.weir.dev/keep`            |
//! | `token`         | a Secret of type `kubernetes.io/service-account-token`       |
//! | `huge-status`   | the ConfigMap and a status with a `spec.bytes` filler (default 2 MiB) |
//! | `adopt`         | the ConfigMap and one named `spec.target` (default `foreign`) |
//!
//! `finalize` answers `againAfter(spec.finalizeAfterMs)` when that is set, else `complete`.

#![cfg(target_arch = "wasm32")] // a component only: natively the crate is empty

#[allow(
    unsafe_code,
    missing_docs,
    reason = "wit-bindgen generates unsafe FFI glue without docs"
)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit",
        world: "reconciler",
    });

    use super::Chaos;
    export!(Chaos);
}

mod refused;

use bindings::weir::reconciler::types::{ErrorKind, LogLevel, Requeue, ResourceKind};
use bindings::{
    FinalizeRequest, FinalizeResponse, Guest, PluginInfo, ReconcileError, ReconcileRequest,
    ReconcileResponse, log,
};
use serde_json::{Value, json};

struct Chaos;

fn config_map(name: &str, data: Value) -> String {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": data,
    })
    .to_string()
}

fn ok_response(name: &str, mode: &str) -> ReconcileResponse {
    ReconcileResponse {
        children: vec![config_map(name, json!({"mode": mode}))],
        status: Some(json!({"mode": mode}).to_string()),
        requeue: Requeue::Done,
    }
}

fn permanent(message: String) -> ReconcileError {
    ReconcileError {
        kind: ErrorKind::Permanent,
        message,
    }
}

/// Memory the `memory` mode keeps alive so the optimiser cannot drop it.
fn allocate_forever() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = vec![0u8; 1 << 20];
        for byte in block.iter_mut().step_by(4096) {
            *byte = 1;
        }
        hoard.push(std::hint::black_box(block));
    }
}

fn spin_forever() -> ! {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

impl Guest for Chaos {
    fn describe() -> PluginInfo {
        let kind = |group: &str, version: &str, kind: &str, plural: &str| ResourceKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: true,
        };
        PluginInfo {
            name: "chaos".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            parent: kind("test.weir.dev", "v1", "Chaos", "chaoses"),
            children: vec![
                kind("", "v1", "ConfigMap", "configmaps"),
                kind("", "v1", "Secret", "secrets"),
            ],
            finalizer: Some("test.weir.dev/chaos".into()),
            crd: None,
        }
    }

    fn reconcile(request: ReconcileRequest) -> Result<ReconcileResponse, ReconcileError> {
        let parent: Value = serde_json::from_str(&request.parent)
            .map_err(|e| permanent(format!("parent is not JSON: {e}")))?;
        let name = parent["metadata"]["name"]
            .as_str()
            .unwrap_or("chaos")
            .to_string();
        let spec = &parent["spec"];
        let mode = spec["mode"].as_str().unwrap_or("ok");
        match mode {
            "ok" => Ok(ok_response(&name, mode)),
            "loop" => spin_forever(),
            "memory" => allocate_forever(),
            "trap" => panic!("chaos: deliberate trap for {name}"),
            "oversized" => {
                let bytes = spec["bytes"].as_u64().unwrap_or(8 << 20) as usize;
                let filler = "x".repeat(bytes);
                let mut response = ok_response(&name, mode);
                response.children = vec![config_map(&name, json!({"filler": filler}))];
                Ok(response)
            }
            "invalid-json" => {
                let mut response = ok_response(&name, mode);
                response.children = vec!["{\"apiVersion\": \"v1\", \"kind\": ".into()];
                Ok(response)
            }
            "counter" => {
                let observed = request.children.len().to_string();
                let mut response = ok_response(&name, mode);
                response.children = vec![config_map(&name, json!({"observed": observed}))];
                Ok(response)
            }
            "error" => {
                let kind = match spec["errorKind"].as_str() {
                    Some("transient") => ErrorKind::Transient,
                    _ => ErrorKind::Permanent,
                };
                let message = spec["message"]
                    .as_str()
                    .unwrap_or("chaos: failing on request");
                Err(ReconcileError {
                    kind,
                    message: message.into(),
                })
            }
            "log" => {
                for (level, word) in [
                    (LogLevel::Trace, "trace"),
                    (LogLevel::Debug, "debug"),
                    (LogLevel::Info, "info"),
                    (LogLevel::Warn, "warn"),
                    (LogLevel::Error, "error"),
                ] {
                    log(level, &format!("chaos log at {word} for {name}"));
                }
                println!("chaos stdout for {name}");
                eprintln!("chaos stderr for {name}");
                Ok(ok_response(&name, mode))
            }
            other => refused::answer(other, &name, spec)
                .ok_or_else(|| permanent(format!("chaos: unknown spec.mode {other:?}"))),
        }
    }

    fn finalize(request: FinalizeRequest) -> Result<FinalizeResponse, ReconcileError> {
        let parent: Value = serde_json::from_str(&request.parent)
            .map_err(|e| permanent(format!("parent is not JSON: {e}")))?;
        Ok(match parent["spec"]["finalizeAfterMs"].as_u64() {
            Some(ms) => FinalizeResponse::AgainAfter(ms),
            None => FinalizeResponse::Complete,
        })
    }
}
