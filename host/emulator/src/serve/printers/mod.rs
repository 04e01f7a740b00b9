//! The `Table` columns kube-apiserver's printers give the served built-in kinds
//! (`pkg/printers/internalversion/printers.go`), priority 1 being what `-o wide` adds.

use serde_json::{Map, Value, json};

use crate::kinds::resources::ResourceType;

mod workloads;

/// One column: its definition and how a cell is computed from the stored object.
pub struct Column {
    /// The `columnDefinitions` entry.
    pub definition: Value,
    /// The cell of one object.
    pub cell: fn(&Value) -> Value,
}

fn col(name: &str, ty: &str, format: &str, priority: i64, cell: fn(&Value) -> Value) -> Column {
    Column {
        definition: json!({"name": name, "type": ty, "format": format, "description": "", "priority": priority}),
        cell,
    }
}

/// The columns of a built-in kind, `None` for the generic Name/Age (and CRD columns).
pub fn columns(rt: &ResourceType) -> Option<Vec<Column>> {
    let name = || col("Name", "string", "name", 0, |o| at(o, "/metadata/name"));
    let age = || {
        col("Age", "string", "", 0, |o| {
            json!(age_of(o, "/metadata/creationTimestamp"))
        })
    };
    Some(match (rt.group.as_str(), rt.kind.as_str()) {
        ("apps", "Deployment") => vec![
            name(),
            col("Ready", "string", "", 0, |o| {
                json!(format!(
                    "{}/{}",
                    int(o, "/status/readyReplicas"),
                    int(o, "/spec/replicas")
                ))
            }),
            col("Up-to-date", "integer", "", 0, |o| {
                json!(int(o, "/status/updatedReplicas"))
            }),
            col("Available", "integer", "", 0, |o| {
                json!(int(o, "/status/availableReplicas"))
            }),
            age(),
            col("Containers", "string", "", 1, |o| containers(o, "name")),
            col("Images", "string", "", 1, |o| containers(o, "image")),
            col("Selector", "string", "", 1, |o| {
                labels(o.pointer("/spec/selector/matchLabels"))
            }),
        ],
        ("", "Service") => vec![
            name(),
            col("Type", "string", "", 0, |o| at(o, "/spec/type")),
            col("Cluster-IP", "string", "", 0, |o| at(o, "/spec/clusterIP")),
            col("External-IP", "string", "", 0, external_ip),
            col("Port(s)", "string", "", 0, service_ports),
            age(),
            col("Selector", "string", "", 1, |o| {
                labels(o.pointer("/spec/selector"))
            }),
        ],
        ("", "Event") | ("events.k8s.io", "Event") => vec![
            col("Last Seen", "string", "", 0, |o| {
                json!(age_of(o, last_seen(o)))
            }),
            col("Type", "string", "", 0, |o| at(o, "/type")),
            col("Reason", "string", "", 0, |o| at(o, "/reason")),
            col("Object", "string", "", 0, |o| {
                let kind = str_at(o, "/involvedObject/kind").to_lowercase();
                json!(format!("{kind}/{}", str_at(o, "/involvedObject/name")))
            }),
            col("Subobject", "string", "", 1, |o| {
                at(o, "/involvedObject/fieldPath")
            }),
            col("Source", "string", "", 1, |o| {
                let component = str_at(o, "/source/component");
                let component = if component.is_empty() {
                    str_at(o, "/reportingComponent")
                } else {
                    component
                };
                match str_at(o, "/source/host") {
                    "" => json!(component),
                    host => json!(format!("{component}, {host}")),
                }
            }),
            col("Message", "string", "", 0, |o| at(o, "/message")),
            col("First Seen", "string", "", 1, |o| {
                let path = if str_at(o, "/firstTimestamp").is_empty() {
                    "/eventTime"
                } else {
                    "/firstTimestamp"
                };
                json!(age_of(o, path))
            }),
            col("Count", "string", "", 1, |o| {
                let n = o.pointer("/series/count").or_else(|| o.pointer("/count"));
                json!(n.and_then(Value::as_i64).unwrap_or(1))
            }),
            col("Name", "string", "name", 1, |o| at(o, "/metadata/name")),
        ],
        ("", "ConfigMap") => vec![name(), col("Data", "integer", "", 0, data_count), age()],
        ("", "Secret") => vec![
            name(),
            col("Type", "string", "", 0, |o| at(o, "/type")),
            col("Data", "integer", "", 0, data_count),
            age(),
        ],
        ("", "Namespace") => vec![
            name(),
            col("Status", "string", "", 0, |o| at(o, "/status/phase")),
            age(),
        ],
        ("scheduling.k8s.io", "PriorityClass") => vec![
            name(),
            col("Value", "integer", "", 0, |o| json!(int(o, "/value"))),
            col("Global-Default", "boolean", "", 0, |o| {
                json!(
                    o.get("globalDefault")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                )
            }),
            age(),
            col("PreemptionPolicy", "string", "", 0, |o| {
                at(o, "/preemptionPolicy")
            }),
        ],
        ("coordination.k8s.io", "Lease") => vec![
            name(),
            col("Holder", "string", "", 0, |o| at(o, "/spec/holderIdentity")),
            age(),
        ],
        _ => return workloads::columns(rt, name, age),
    })
}

fn at(o: &Value, pointer: &str) -> Value {
    o.pointer(pointer).cloned().unwrap_or(json!(""))
}

fn str_at<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn data_count(o: &Value) -> Value {
    let count = |k: &str| o.get(k).and_then(Value::as_object).map_or(0, Map::len);
    json!(count("data") + count("binaryData"))
}

fn containers(o: &Value, field: &str) -> Value {
    let list: Vec<&str> = o
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get(field).and_then(Value::as_str))
        .collect();
    json!(list.join(","))
}

fn labels(map: Option<&Value>) -> Value {
    let pairs: Vec<String> = map
        .and_then(Value::as_object)
        .unwrap_or(&Map::new())
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    json!(if pairs.is_empty() {
        "<none>".to_string()
    } else {
        pairs.join(",")
    })
}

/// `getServiceExternalIP`: `<none>` for ClusterIP, the external name, or the load balancer's.
fn external_ip(o: &Value) -> Value {
    let external: Vec<&str> = o
        .pointer("/spec/externalIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let text = match str_at(o, "/spec/type") {
        "ExternalName" => str_at(o, "/spec/externalName").to_string(),
        "LoadBalancer" => {
            let ingress: Vec<&str> = o
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    i.get("ip")
                        .or_else(|| i.get("hostname"))
                        .and_then(Value::as_str)
                })
                .chain(external.iter().copied())
                .collect();
            if ingress.is_empty() {
                "<pending>".into()
            } else {
                ingress.join(",")
            }
        }
        _ if !external.is_empty() => external.join(","),
        _ => "<none>".into(),
    };
    json!(text)
}

/// `80/TCP,443:31443/TCP`.
fn service_ports(o: &Value) -> Value {
    let ports: Vec<String> = o
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(n) if n != 0 => format!("{port}:{n}/{proto}"),
                _ => format!("{port}/{proto}"),
            }
        })
        .collect();
    json!(if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    })
}

/// When an Event was last seen: its series, else lastTimestamp, else eventTime.
fn last_seen(o: &Value) -> &'static str {
    if o.pointer("/series/lastObservedTime").is_some() {
        "/series/lastObservedTime"
    } else if !str_at(o, "/lastTimestamp").is_empty() {
        "/lastTimestamp"
    } else if !str_at(o, "/eventTime").is_empty() {
        "/eventTime"
    } else {
        "/metadata/creationTimestamp"
    }
}

/// kubectl's age of the timestamp at `pointer`, `<unknown>` when absent.
pub fn age_of(o: &Value, pointer: &str) -> String {
    let at = o
        .pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok());
    match at {
        Some(t) => human_age(k8s_openapi::jiff::Timestamp::now().as_second() - t.as_second()),
        None => "<unknown>".into(),
    }
}

/// kubectl's short age format: `45s`, `3m20s`, `5h`, `2d3h`, `400d`.
pub fn human_age(seconds: i64) -> String {
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 && s % 60 != 0 => format!("{m}m{}s", s % 60),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 && m % 60 != 0 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if h < 192 && h % 24 != 0 => format!("{d}d{}h", h % 24),
        _ if d < 730 => format!("{d}d"),
        _ => format!("{}y", d / 365),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(human_age(42), "42s");
        assert_eq!(human_age(200), "3m20s");
        assert_eq!(human_age(3600 * 5), "5h");
        assert_eq!(human_age(86400 * 2 + 3600 * 3), "2d3h");
    }

    #[test]
    fn service_ports_show_node_ports_and_protocols() {
        let svc = json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(service_ports(&svc), json!("80:30080/TCP,53/UDP"));
        assert_eq!(external_ip(&svc), json!("<none>"));
    }
}
