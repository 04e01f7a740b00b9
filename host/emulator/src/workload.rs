//! Deployment status simulation: replicas become ready and Available after a delay, like KWOK.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::config::WorkloadSimulation;
use crate::object;
use crate::ops;
use crate::opts::{Validation, WriteOpts};
use crate::resources::ResKey;
use crate::shared::Shared;
use crate::store::{EventType, ObjKey};

const MANAGER: &str = "deployment-controller";

fn deployments() -> ResKey {
    ResKey {
        group: "apps".into(),
        plural: "deployments".into(),
    }
}

fn condition(kind: &str, ok: bool, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": kind, "status": if ok { "True" } else { "False" }, "reason": reason, "message": message,
           "lastUpdateTime": now, "lastTransitionTime": now})
}

/// Write the status a deployment controller would report; `ready` says whether pods are up.
fn write_status(shared: &Shared, key: &ObjKey, generation: i64, ready: bool) {
    let mut store = shared.lock();
    let Some(current) = store.get(key) else {
        return;
    };
    if object::generation(&current) != generation || object::is_deleting(&current) {
        return;
    }
    let Some(rt) = store.registry.find("apps", "v1", "deployments").cloned() else {
        return;
    };
    let desired = current
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let previous_available = current
        .pointer("/status/availableReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let available = if ready {
        desired
    } else {
        previous_available.min(desired)
    };
    let now = object::now_rfc3339();
    let name = object::name(&current);
    let mut status = json!({
        "observedGeneration": generation,
        "replicas": desired,
        "updatedReplicas": desired,
        "readyReplicas": available,
        "availableReplicas": available,
        "conditions": [
            if available >= desired {
                condition("Available", true, "MinimumReplicasAvailable", "Deployment has minimum availability.", &now)
            } else {
                condition("Available", false, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", &now)
            },
            if ready {
                condition("Progressing", true, "NewReplicaSetAvailable", &format!("ReplicaSet \"{name}\" has successfully progressed."), &now)
            } else {
                condition("Progressing", true, "ReplicaSetUpdated", &format!("ReplicaSet \"{name}\" is progressing."), &now)
            },
        ],
    });
    if desired > available {
        status["unavailableReplicas"] = json!(desired - available);
    }
    // Keep transition times when the condition status did not change.
    if let Some(old) = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        && let Some(new) = status.get_mut("conditions").and_then(Value::as_array_mut)
    {
        for c in new.iter_mut() {
            if let Some(o) = old
                .iter()
                .find(|o| o.get("type") == c.get("type") && o.get("status") == c.get("status"))
            {
                c["lastTransitionTime"] =
                    o.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
                if o.get("reason") == c.get("reason") {
                    c["lastUpdateTime"] = o.get("lastUpdateTime").cloned().unwrap_or(Value::Null);
                }
            }
        }
    }
    if current.get("status") == Some(&status) {
        return;
    }
    let mut updated = (*current).clone();
    updated["status"] = status;
    let opts = WriteOpts {
        manager: MANAGER.into(),
        validation: Validation::Ignore,
        dry_run: false,
        force: false,
    };
    if let Err(e) = ops::update(&mut store, &rt, key, updated, true, &opts) {
        tracing::warn!(deployment = %key.name, namespace = %key.ns, error = %e, "could not write simulated status");
    }
}

/// Whether the deployment already shows the final simulated status for its generation.
fn settled(obj: &Value) -> bool {
    let desired = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    obj.pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        == Some(object::generation(obj))
        && obj
            .pointer("/status/availableReplicas")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == desired
        && obj.pointer("/status/replicas").and_then(Value::as_i64) == Some(desired)
}

/// React to every Deployment change until the emulator stops.
pub async fn run(shared: Arc<Shared>, sim: WorkloadSimulation) {
    let (mut rx, existing) = {
        let store = shared.lock();
        (store.subscribe(), store.keys(&deployments()))
    };
    let mut scheduled: HashMap<ObjKey, i64> = HashMap::new();
    let mut visit = |key: ObjKey, shared: &Arc<Shared>| {
        let Some(obj) = shared.lock().get(&key) else {
            scheduled.remove(&key);
            return;
        };
        let generation = object::generation(&obj);
        if settled(&obj) || scheduled.get(&key) == Some(&generation) {
            return;
        }
        scheduled.insert(key.clone(), generation);
        write_status(shared, &key, generation, sim.ready_after.is_zero());
        let (shared, delay) = (shared.clone(), sim.ready_after);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            write_status(&shared, &key, generation, true);
        });
    };
    for key in existing {
        visit(key, &shared);
    }
    loop {
        match rx.recv().await {
            Ok(ev) if ev.key.res == deployments() && ev.kind != EventType::Deleted => {
                visit(ev.key.clone(), &shared)
            }
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => {
                let keys = shared.lock().keys(&deployments());
                for key in keys {
                    visit(key, &shared);
                }
            }
            Err(RecvError::Closed) => return,
        }
    }
}
