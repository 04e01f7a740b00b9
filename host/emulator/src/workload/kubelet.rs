//! The scheduler and kubelet of the one simulated node: Pods are bound to it, Pending at
//! first, then Running and Ready with an IP after the configured delay — or Succeeded, for a
//! Pod whose `restartPolicy` is `Never` or `OnFailure` (a Job's, or any other owner's), whose
//! containers exit 0 (KWOK's `pod-ready` and `pod-complete` stages).

use serde_json::{Value, json};

use super::{NODE, NODE_IP, Sim, pods, update, write_status_of};
use crate::store::{ObjKey, Store};
use crate::wire::object;

const MANAGER: &str = "kubelet";

/// Reconcile one Pod. What it decides from is read as a [`pods::summary`]; the Pod is read in
/// full only when there is something to write.
pub(super) fn reconcile(store: &mut Store, sim: &mut Sim, key: &ObjKey) {
    let Some(seen) = pods::summary_at(store, key) else {
        sim.starts.remove(key);
        return;
    };
    if object::is_deleting(&seen) {
        return;
    }
    let uid = object::uid(&seen).to_string();
    if seen
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let Some(pod) = store.get(key) else { return };
        let mut bound = pod.clone();
        bound["spec"]["nodeName"] = json!(NODE);
        // Bound, the Pod goes on at once: the simulation does not hear its own changes.
        if update(store, key, &pod, bound, false, "default-scheduler").is_some() {
            reconcile(store, sim, key);
        }
        return;
    }
    let phase = seen
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !matches!(phase, "" | "Pending") {
        sim.starts.remove(key);
        return;
    }
    let now = tokio::time::Instant::now();
    let due = match sim.starts.get(key) {
        Some((u, due)) if *u == uid => *due,
        _ => {
            let due = if sim.delay.is_zero() {
                now
            } else {
                sim.wake_at(key.clone(), now + sim.delay)
            };
            sim.starts.insert(key.clone(), (uid, due));
            due
        }
    };
    if now < due {
        // A Pending status already written is kept as it is (see `pending`).
        if seen.pointer("/status/hostIP").is_some() {
            return;
        }
        let Some(pod) = store.get(key) else { return };
        write_status_of(store, key, &pod, pending(&pod), MANAGER);
        return;
    }
    sim.starts.remove(key);
    let ip = sim.pod_ip();
    let Some(pod) = store.get(key) else { return };
    let runs_to_completion = matches!(
        pod.pointer("/spec/restartPolicy").and_then(Value::as_str),
        Some("Never" | "OnFailure")
    );
    let status = if runs_to_completion {
        succeeded(&pod, &ip)
    } else {
        running(&pod, &ip)
    };
    write_status_of(store, key, &pod, status, MANAGER);
}

fn cond(kind: &str, ok: bool, reason: Option<&str>, now: &str) -> Value {
    let mut c = json!({"type": kind, "status": if ok { "True" } else { "False" },
                       "lastProbeTime": null, "lastTransitionTime": now});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    c
}

fn containers(pod: &Value) -> Vec<(String, String)> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (s("name"), s("image"))
        })
        .collect()
}

/// An image reference as the container runtime reports it (`docker.io/library/` added).
fn qualified(image: &str) -> String {
    let first = image.split('/').next().unwrap_or("");
    if !image.contains('/') {
        format!("docker.io/library/{image}")
    } else if first.contains('.') || first.contains(':') || first == "localhost" {
        image.to_string()
    } else {
        format!("docker.io/{image}")
    }
}

/// A stable 64-hex-digit container ID from the Pod's uid and the container's name.
fn container_id(pod: &Value, name: &str) -> String {
    let seed = format!("{}/{name}", object::uid(pod));
    let words: String = (0u8..8)
        .map(|salt| {
            let h = seed.bytes().chain([salt]).fold(0x811c_9dc5_u32, |h, b| {
                (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
            });
            format!("{h:08x}")
        })
        .collect();
    format!("containerd://{words}")
}

fn base(pod: &Value, ip: Option<&str>, now: &str) -> Value {
    let mut s = json!({
        "phase": "Pending",
        "hostIP": NODE_IP,
        "hostIPs": [{"ip": NODE_IP}],
        "startTime": pod.pointer("/status/startTime").cloned().unwrap_or(json!(now)),
        "qosClass": pod.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort")),
    });
    if let Some(ip) = ip {
        s["podIP"] = json!(ip);
        s["podIPs"] = json!([{"ip": ip}]);
    }
    s
}

/// Scheduled, containers being created.
fn pending(pod: &Value) -> Value {
    if let Some(status) = pod.get("status")
        && status.get("hostIP").is_some()
    {
        return status.clone();
    }
    let now = object::now_rfc3339();
    let mut s = base(pod, None, &now);
    s["conditions"] = json!([
        cond("PodReadyToStartContainers", false, None, &now),
        cond("Initialized", true, None, &now),
        cond("Ready", false, Some("ContainersNotReady"), &now),
        cond("ContainersReady", false, Some("ContainersNotReady"), &now),
        cond("PodScheduled", true, None, &now),
    ]);
    s["containerStatuses"] = containers(pod)
        .into_iter()
        .map(|(name, image)| {
            json!({"name": name, "image": image, "imageID": "", "ready": false, "started": false,
                   "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}})
        })
        .collect();
    s
}

/// Every container running and ready.
fn running(pod: &Value, ip: &str) -> Value {
    let now = object::now_rfc3339();
    let mut s = base(pod, Some(ip), &now);
    s["phase"] = json!("Running");
    s["conditions"] = json!([
        cond("PodReadyToStartContainers", true, None, &now),
        cond("Initialized", true, None, &now),
        cond("Ready", true, None, &now),
        cond("ContainersReady", true, None, &now),
        cond("PodScheduled", true, None, &now),
    ]);
    s["containerStatuses"] = containers(pod)
        .into_iter()
        .map(|(name, image)| {
            json!({"name": name, "image": image, "imageID": format!("{}@sha256:{:0>64}", qualified(&image), ""),
                   "containerID": container_id(pod, &name), "ready": true, "started": true, "restartCount": 0,
                   "state": {"running": {"startedAt": now}}, "lastState": {}})
        })
        .collect();
    s
}

/// Every container exited 0: a Pod run to completion.
fn succeeded(pod: &Value, ip: &str) -> Value {
    let now = object::now_rfc3339();
    let mut s = base(pod, Some(ip), &now);
    s["phase"] = json!("Succeeded");
    s["conditions"] = json!([
        cond("PodReadyToStartContainers", false, None, &now),
        cond("Initialized", true, Some("PodCompleted"), &now),
        cond("Ready", false, Some("PodCompleted"), &now),
        cond("ContainersReady", false, Some("PodCompleted"), &now),
        cond("PodScheduled", true, None, &now),
    ]);
    s["containerStatuses"] = containers(pod)
        .into_iter()
        .map(|(name, image)| {
            json!({"name": name, "image": image, "imageID": format!("{}@sha256:{:0>64}", qualified(&image), ""),
                   "containerID": container_id(pod, &name), "ready": false, "started": false, "restartCount": 0,
                   "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now,
                                            "containerID": container_id(pod, &name)}},
                   "lastState": {}})
        })
        .collect();
    s
}
