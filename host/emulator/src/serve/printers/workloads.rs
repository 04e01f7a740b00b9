//! Columns of the workload kinds (`printPod`, `printReplicaSet`, `printJob`, ... in
//! `pkg/printers/internalversion/printers.go`).

use serde_json::{Value, json};

use super::{Column, age_of, at, col, containers, int, labels, str_at};
use crate::kinds::resources::ResourceType;

/// The columns of a workload kind; `name` and `age` build the shared Name and Age columns.
pub(super) fn columns(
    rt: &ResourceType,
    name: impl Fn() -> Column,
    age: impl Fn() -> Column,
) -> Option<Vec<Column>> {
    let wide = || {
        vec![
            col("Containers", "string", "", 1, |o| containers(o, "name")),
            col("Images", "string", "", 1, |o| containers(o, "image")),
            col("Selector", "string", "", 1, |o| {
                labels(o.pointer("/spec/selector/matchLabels"))
            }),
        ]
    };
    Some(match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Pod") => vec![
            name(),
            col("Ready", "string", "", 0, pod_ready),
            col("Status", "string", "", 0, pod_status),
            col("Restarts", "string", "", 0, |o| {
                let restarts: i64 = statuses(o)
                    .iter()
                    .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                    .sum();
                json!(restarts.to_string())
            }),
            age(),
            col("IP", "string", "", 1, |o| {
                none_if_empty(str_at(o, "/status/podIP"))
            }),
            col("Node", "string", "", 1, |o| {
                none_if_empty(str_at(o, "/spec/nodeName"))
            }),
            col("Nominated Node", "string", "", 1, |o| {
                none_if_empty(str_at(o, "/status/nominatedNodeName"))
            }),
            col("Readiness Gates", "string", "", 1, |_| json!("<none>")),
        ],
        ("apps", "ReplicaSet") => {
            let mut v = vec![
                name(),
                col("Desired", "integer", "", 0, |o| {
                    json!(int(o, "/spec/replicas"))
                }),
                col("Current", "integer", "", 0, |o| {
                    json!(int(o, "/status/replicas"))
                }),
                col("Ready", "integer", "", 0, |o| {
                    json!(int(o, "/status/readyReplicas"))
                }),
                age(),
            ];
            v.extend(wide());
            v
        }
        ("apps", "StatefulSet") => {
            let mut v = vec![
                name(),
                col("Ready", "string", "", 0, |o| {
                    json!(format!(
                        "{}/{}",
                        int(o, "/status/readyReplicas"),
                        int(o, "/spec/replicas")
                    ))
                }),
                age(),
            ];
            v.extend(wide().into_iter().take(2));
            v
        }
        ("apps", "DaemonSet") => {
            let mut v = vec![
                name(),
                col("Desired", "integer", "", 0, |o| {
                    json!(int(o, "/status/desiredNumberScheduled"))
                }),
                col("Current", "integer", "", 0, |o| {
                    json!(int(o, "/status/currentNumberScheduled"))
                }),
                col("Ready", "integer", "", 0, |o| {
                    json!(int(o, "/status/numberReady"))
                }),
                col("Up-to-date", "integer", "", 0, |o| {
                    json!(int(o, "/status/updatedNumberScheduled"))
                }),
                col("Available", "integer", "", 0, |o| {
                    json!(int(o, "/status/numberAvailable"))
                }),
            ];
            v.push(col("Node Selector", "string", "", 0, |o| {
                labels(o.pointer("/spec/template/spec/nodeSelector"))
            }));
            v.push(age());
            v.extend(wide());
            v
        }
        ("batch", "Job") => {
            let mut v = vec![
                name(),
                col("Status", "string", "", 0, job_status),
                col("Completions", "string", "", 0, |o| {
                    json!(format!(
                        "{}/{}",
                        int(o, "/status/succeeded"),
                        o.pointer("/spec/completions")
                            .and_then(Value::as_i64)
                            .unwrap_or(1)
                    ))
                }),
                col("Duration", "string", "", 0, job_duration),
                age(),
            ];
            v.extend(wide());
            v
        }
        ("batch", "CronJob") => vec![
            name(),
            col("Schedule", "string", "", 0, |o| at(o, "/spec/schedule")),
            col("Timezone", "string", "", 0, |o| {
                none_if_empty(str_at(o, "/spec/timeZone"))
            }),
            col("Suspend", "boolean", "", 0, |o| {
                json!(
                    o.pointer("/spec/suspend")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                )
            }),
            col("Active", "integer", "", 0, |o| {
                json!(
                    o.pointer("/status/active")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len)
                )
            }),
            col("Last Schedule", "string", "", 0, |o| {
                json!(match o.pointer("/status/lastScheduleTime") {
                    Some(_) => age_of(o, "/status/lastScheduleTime"),
                    None => "<none>".into(),
                })
            }),
            age(),
        ],
        ("", "Endpoints") => vec![name(), col("Endpoints", "string", "", 0, endpoints), age()],
        ("discovery.k8s.io", "EndpointSlice") => vec![
            name(),
            col("AddressType", "string", "", 0, |o| at(o, "/addressType")),
            col("Ports", "string", "", 0, |o| {
                let ports: Vec<String> = list(o, "/ports")
                    .iter()
                    .filter_map(|p| p.get("port").and_then(Value::as_i64))
                    .map(|p| p.to_string())
                    .collect();
                json!(if ports.is_empty() {
                    "<unset>".into()
                } else {
                    ports.join(",")
                })
            }),
            col("Endpoints", "string", "", 0, |o| {
                let ips: Vec<&str> = list(o, "/endpoints")
                    .iter()
                    .flat_map(|e| {
                        e.get("addresses")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    })
                    .filter_map(Value::as_str)
                    .collect();
                json!(if ips.is_empty() {
                    "<unset>".into()
                } else {
                    ips.join(",")
                })
            }),
            age(),
        ],
        ("", "PersistentVolumeClaim") => vec![
            name(),
            col("Status", "string", "", 0, |o| at(o, "/status/phase")),
            col("Volume", "string", "", 0, |o| at(o, "/spec/volumeName")),
            col("Capacity", "string", "", 0, |o| {
                at(o, "/status/capacity/storage")
            }),
            col("Access Modes", "string", "", 0, |_| json!("")),
            col("StorageClass", "string", "", 0, |o| {
                at(o, "/spec/storageClassName")
            }),
            age(),
        ],
        _ => return None,
    })
}

fn none_if_empty(s: &str) -> Value {
    json!(if s.is_empty() { "<none>" } else { s })
}

fn list<'a>(o: &'a Value, pointer: &str) -> &'a [Value] {
    o.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn statuses(o: &Value) -> &[Value] {
    list(o, "/status/containerStatuses")
}

fn pod_ready(o: &Value) -> Value {
    let total = list(o, "/spec/containers").len();
    let ready = statuses(o)
        .iter()
        .filter(|c| c.get("ready") == Some(&json!(true)))
        .count();
    json!(format!("{ready}/{total}"))
}

/// `printPod`'s reason: the phase, or a container's waiting/terminated reason, or `Terminating`.
fn pod_status(o: &Value) -> Value {
    if o.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return json!("Terminating");
    }
    let mut reason = str_at(o, "/status/phase").to_string();
    for c in statuses(o) {
        if let Some(r) = c
            .pointer("/state/waiting/reason")
            .or_else(|| c.pointer("/state/terminated/reason"))
            .and_then(Value::as_str)
        {
            reason = r.to_string();
        }
    }
    json!(reason)
}

fn job_status(o: &Value) -> Value {
    let has = |t: &str| {
        list(o, "/status/conditions")
            .iter()
            .any(|c| c.get("type") == Some(&json!(t)) && c.get("status") == Some(&json!("True")))
    };
    json!(if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if o.pointer("/spec/suspend") == Some(&json!(true)) {
        "Suspended"
    } else {
        "Running"
    })
}

fn job_duration(o: &Value) -> Value {
    let time = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
    };
    let Some(start) = time("/status/startTime") else {
        return json!("");
    };
    let end = time("/status/completionTime").unwrap_or_else(k8s_openapi::jiff::Timestamp::now);
    json!(super::human_age(end.as_second() - start.as_second()))
}

/// `formatEndpoints`: up to three `ip:port` pairs, then `+ N more...`.
fn endpoints(o: &Value) -> Value {
    let mut pairs = Vec::new();
    for subset in list(o, "/subsets") {
        let ports: Vec<i64> = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("port").and_then(Value::as_i64))
            .collect();
        for a in subset
            .get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ip = a.get("ip").and_then(Value::as_str).unwrap_or("");
            if ports.is_empty() {
                pairs.push(ip.to_string());
            }
            for p in &ports {
                pairs.push(format!("{ip}:{p}"));
            }
        }
    }
    json!(match pairs.len() {
        0 => "<none>".to_string(),
        n if n > 3 => format!("{} + {} more...", pairs[..3].join(","), n - 3),
        _ => pairs.join(","),
    })
}
