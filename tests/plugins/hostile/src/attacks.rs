//! The answers of the `Attack` plugin, one per `spec.attack` (the table is in the crate docs).

use std::io::Write;

use serde_json::{Value, json};

use crate::bindings::weir::reconciler::types::{ErrorKind, LogLevel, Requeue};
use crate::bindings::{ReconcileError, ReconcileResponse, log};
use crate::{permanent, probes};

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn answer(children: Vec<Value>, status: Value, requeue: Requeue) -> ReconcileResponse {
    ReconcileResponse {
        children: children.iter().map(Value::to_string).collect(),
        status: Some(status.to_string()),
        requeue,
    }
}

/// The ConfigMap `<name>` every plain attack asks for, status `{attack}` and `extra`.
fn plain(name: &str, attack: &str, extra: Value, requeue: Requeue) -> ReconcileResponse {
    let mut status = json!({"attack": attack});
    if let (Some(status), Some(extra)) = (status.as_object_mut(), extra.as_object()) {
        status.extend(extra.clone());
    }
    answer(
        vec![config_map(name, json!({"attack": attack}))],
        status,
        requeue,
    )
}

fn spin_forever() -> ! {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

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

/// What the plugin observes of its Secret children: data, stringData and annotations.
fn observed_secrets(children: &[String]) -> Vec<Value> {
    children
        .iter()
        .filter_map(|c| serde_json::from_str::<Value>(c).ok())
        .filter(|c| c["kind"] == "Secret")
        .map(|c| {
            json!({
                "name": c["metadata"]["name"],
                "data": c["data"],
                "stringData": c["stringData"],
                "annotations": c["metadata"]["annotations"],
            })
        })
        .collect()
}

/// The highest `n` of the observed ConfigMaps `<prefix><n>`.
fn highest(children: &[String], prefix: &str) -> u64 {
    children
        .iter()
        .filter_map(|c| serde_json::from_str::<Value>(c).ok())
        .filter_map(|c| {
            c["metadata"]["name"]
                .as_str()?
                .strip_prefix(prefix)?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

/// Answers (or misbehaves) for the parent's `spec.attack`.
pub fn reconcile(parent: &Value, children: &[String]) -> Result<ReconcileResponse, ReconcileError> {
    let name = parent["metadata"]["name"].as_str().unwrap_or("attack");
    let spec = &parent["spec"];
    let attack = spec["attack"].as_str().unwrap_or("none");
    let target = spec["target"].as_str().unwrap_or("default");
    let done = Requeue::Done;
    Ok(match attack {
        "token-secret" => {
            let token = json!({
                "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                "metadata": {"name": format!("{name}-token"),
                    "annotations": {"kubernetes.io/service-account.name": "default"}},
            });
            answer(vec![token], json!({"attack": attack}), done)
        }
        "read-secret" => {
            let seen = observed_secrets(children);
            let vault = json!({
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": format!("{name}-vault")},
                "data": {"seed": "c2VlZA=="},
            });
            let leak = config_map(
                &format!("{name}-leak"),
                json!({"seen": json!(seen).to_string()}),
            );
            answer(
                vec![vault, leak],
                json!({"attack": attack, "seen": seen}),
                done,
            )
        }
        "user-secret" => {
            let steal = json!({
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": target},
                "data": {"password": "b3duZWQ="},
            });
            answer(vec![steal], json!({"attack": attack}), done)
        }
        "sleep" => {
            std::thread::sleep(std::time::Duration::from_secs(60));
            plain(name, attack, json!({}), done)
        }
        "spin" => spin_forever(),
        "huge-error" => {
            return Err(ReconcileError {
                kind: ErrorKind::Permanent,
                message: format!("hostile: {}", "E".repeat(1 << 20)),
            });
        }
        "log-flood" => {
            let line = "L".repeat(1 << 10);
            for _ in 0..20_000 {
                log(LogLevel::Error, &line);
            }
            plain(name, attack, json!({}), done)
        }
        "log-forge" => {
            log(
                LogLevel::Info,
                "done\n2025-01-01T00:00:00.000000Z  INFO weir::reconcile::apply: applied child kind=Secret name=admin-token\r\x1b[2K",
            );
            plain(name, attack, json!({}), done)
        }
        "stdio" => {
            let mebibyte = vec![b'O'; 1 << 20];
            let out = std::io::stdout().write_all(&mebibyte).is_ok();
            let err = std::io::stderr().write_all(&mebibyte).is_ok();
            plain(name, attack, json!({"stdout": out, "stderr": err}), done)
        }
        "requeue-zero" | "finalize-zero" => plain(name, attack, json!({}), Requeue::After(0)),
        "requeue-now" => plain(name, attack, json!({}), Requeue::Now),
        "churn" => {
            let prefix = format!("{name}-churn-");
            let next = highest(children, &prefix) + 1;
            let child = config_map(&format!("{prefix}{next}"), json!({"n": next.to_string()}));
            answer(vec![child], json!({"attack": attack}), Requeue::After(0))
        }
        "huge-status" => {
            let filler = "S".repeat(3_500_000);
            plain(name, attack, json!({"filler": filler}), done)
        }
        "huge-answer" => {
            let filler = "A".repeat(8 << 20);
            let child = config_map(name, json!({"filler": filler}));
            answer(vec![child], json!({"attack": attack}), done)
        }
        "conditions-flood" => {
            let mut conditions = vec![json!({
                "type": "Ready", "status": "True", "reason": "Forged",
                "message": "M".repeat(64 << 10),
            })];
            conditions.extend((0..2_000).map(|i| {
                json!({"type": format!("Fake{i}"), "status": "True", "reason": "Flood", "message": "x"})
            }));
            plain(name, attack, json!({"conditions": conditions}), done)
        }
        "child-finalizers" => {
            let mut child = config_map(name, json!({"attack": attack}));
            child["metadata"]["finalizers"] = json!(["test.weir.dev/forever"]);
            answer(vec![child], json!({"attack": attack}), done)
        }
        "forge-owner" => {
            let mut child = config_map(name, json!({"attack": attack}));
            child["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "v1", "kind": "Namespace", "name": target,
                "uid": "00000000-0000-0000-0000-000000000000", "controller": true,
            }]);
            child["metadata"]["labels"] = json!({"weir.dev/parent-uid": "forged"});
            answer(vec![child], json!({"attack": attack}), done)
        }
        "elsewhere" => {
            let mut child = config_map(name, json!({"attack": attack}));
            child["metadata"]["namespace"] = json!(target);
            answer(vec![child], json!({"attack": attack}), done)
        }
        "adopt" => {
            let child = config_map(target, json!({"attack": attack}));
            answer(vec![child], json!({"attack": attack}), done)
        }
        "duplicate" => {
            let child = config_map(name, json!({"attack": attack}));
            answer(vec![child.clone(), child], json!({"attack": attack}), done)
        }
        "invalid-name" => {
            let child = config_map("Not_A_Name", json!({"attack": attack}));
            answer(vec![child], json!({"attack": attack}), done)
        }
        "many" => {
            let children = (0..300)
                .map(|i| config_map(&format!("{name}-{i}"), json!({"attack": attack})))
                .collect();
            answer(children, json!({"attack": attack}), done)
        }
        "invalid-json" => ReconcileResponse {
            children: vec!["{\"apiVersion\": \"v1\", \"kind\": ".into()],
            status: None,
            requeue: done,
        },
        "memory" => allocate_forever(),
        "trap" => panic!("hostile: deliberate trap for {name}"),
        "env" => plain(name, attack, json!({"probe": probes::env()}), done),
        "fs" => plain(name, attack, json!({"probe": probes::fs()}), done),
        "net" => plain(name, attack, json!({"probe": probes::net(target)}), done),
        other => return Err(permanent(format!("hostile: unknown spec.attack {other:?}"))),
    })
}
