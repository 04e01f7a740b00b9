//! The job controller: Pods up to `parallelism` until `completions` have succeeded, then the
//! `SuccessCriteriaMet` and `Complete` conditions with the completion time.

use serde_json::{Value, json};

use super::{active, condition, controlled, controller_ref, create, ready, res, write_status};
use crate::store::{ObjKey, Store};
use crate::wire::object;

const MANAGER: &str = "kube-controller-manager";

fn phase(p: &Value) -> &str {
    p.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Reconcile one Job.
pub(super) fn reconcile(store: &mut Store, key: &ObjKey) {
    let Some(job) = store.get(key) else { return };
    if object::is_deleting(&job) {
        return;
    }
    let old_status = job.get("status").cloned().unwrap_or(json!({}));
    let finished = old_status
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            matches!(
                c.get("type").and_then(Value::as_str),
                Some("Complete" | "Failed")
            ) && c.get("status") == Some(&json!("True"))
        });
    if finished {
        return;
    }
    let pods_res = res("", "pods");
    let spec_int = |p: &str| job.pointer(p).and_then(Value::as_i64);
    let completions = spec_int("/spec/completions");
    let parallelism = spec_int("/spec/parallelism").unwrap_or(1).max(0);
    let suspended = job.pointer("/spec/suspend") == Some(&json!(true));
    let pods = controlled(store, &job, &pods_res);
    let succeeded = pods.iter().filter(|(_, p)| phase(p) == "Succeeded").count() as i64;
    let failed = pods.iter().filter(|(_, p)| phase(p) == "Failed").count() as i64;
    let mut running = pods.iter().filter(|(_, p)| active(p)).count() as i64;
    // Without `completions`, the first success completes the Job (a work queue).
    let complete = match completions {
        Some(c) => succeeded >= c,
        None => succeeded > 0 && running == 0,
    };
    if !complete && !suspended {
        let remaining = completions.map_or(parallelism, |c| c - succeeded);
        let wanted = parallelism.min(remaining);
        let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let owner = controller_ref(&job, "batch/v1", "Job");
        let prefix = format!("{}-", key.name);
        while running < wanted {
            let body =
                super::replicaset::pod_from_template(&template, owner.clone(), Some(&prefix), None);
            if create(store, &pods_res, &key.ns, body, MANAGER).is_none() {
                break;
            }
            running += 1;
        }
    }
    let Some(job) = store.get(key) else { return };
    let pods = controlled(store, &job, &pods_res);
    let active_now = pods.iter().filter(|(_, p)| active(p)).count() as i64;
    let ready_now = pods.iter().filter(|(_, p)| ready(p)).count() as i64;
    let now = object::now_rfc3339();
    let mut status = json!({
        "startTime": old_status.get("startTime").cloned().unwrap_or(json!(now)),
        "active": active_now,
        "ready": ready_now,
        "succeeded": succeeded,
        "failed": failed,
        "terminating": 0,
        "uncountedTerminatedPods": {},
    });
    if let Some(m) = status.as_object_mut() {
        m.retain(|k, v| matches!(k.as_str(), "ready" | "terminating") || *v != json!(0));
    }
    if suspended {
        status = old_status.clone();
    }
    if complete {
        let met = condition(
            Some(&old_status),
            "SuccessCriteriaMet",
            true,
            "CompletionsReached",
            "Reached expected number of succeeded pods",
        );
        let done = condition(
            Some(&old_status),
            "Complete",
            true,
            "CompletionsReached",
            "Reached expected number of succeeded pods",
        );
        let with_probe = |mut c: Value| {
            c["lastProbeTime"] = c["lastTransitionTime"].clone();
            c
        };
        status["conditions"] = json!([with_probe(met), with_probe(done)]);
        status["completionTime"] = json!(now);
    }
    write_status(store, key, status, MANAGER);
}
