//! The endpoints and endpointslice controllers: a Service with a selector gets an Endpoints
//! object of its name and one EndpointSlice listing the Pods it selects, ready or not.

use serde_json::{Map, Value, json};

use super::{
    active, controlled, controller_ref, create, delete, pods, ready, res, selects, update,
};
use crate::store::{ObjKey, Store};
use crate::wire::object;

const MANAGER: &str = "kube-controller-manager";
const SERVICE_NAME: &str = "kubernetes.io/service-name";
const TRIGGER: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// A Service port's target as a number: an int `targetPort`, or a named one looked up in the
/// Pods' container ports (`podutil.FindPort`).
fn target_port(port: &Value, pods: &[Value]) -> Option<i64> {
    match port.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) => pods.iter().find_map(|p| {
            p.pointer("/spec/containers")?
                .as_array()?
                .iter()
                .flat_map(|c| {
                    c.get("ports")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                })
                .find(|cp| cp.get("name").and_then(Value::as_str) == Some(name))?
                .get("containerPort")?
                .as_i64()
        }),
        _ => port.get("port").and_then(Value::as_i64),
    }
}

fn target_ref(pod: &Value) -> Value {
    json!({"kind": "Pod", "name": object::name(pod), "namespace": object::namespace(pod), "uid": object::uid(pod)})
}

/// Reconcile the Endpoints and EndpointSlice of one Service.
pub(super) fn reconcile(store: &mut Store, key: &ObjKey) {
    let ep_key = ObjKey {
        res: res("", "endpoints"),
        ns: key.ns.clone(),
        name: key.name.clone(),
    };
    let svc = store.get(key).filter(|s| !object::is_deleting(s));
    let Some(svc) = svc.filter(|s| {
        s.pointer("/spec/selector")
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty())
    }) else {
        // Endpoints this controller wrote for a Service that is gone (or lost its selector).
        if store.get(&ep_key).is_some_and(|e| {
            e.pointer("/metadata/annotations")
                .and_then(|a| a.get(TRIGGER))
                .is_some()
        }) {
            delete(store, &ep_key);
        }
        return;
    };
    let selector = svc.pointer("/spec/selector");
    // Every Pod the selector matches carries its first pair: look those up, not the namespace.
    let candidates = match selector
        .and_then(Value::as_object)
        .and_then(|m| m.iter().next())
        .and_then(|(k, v)| Some((k.as_str(), v.as_str()?)))
    {
        Some((k, v)) => store.labels().pods_labelled(&key.ns, k, v),
        None => Vec::new(),
    };
    let mut pods: Vec<_> = candidates
        .into_iter()
        .filter_map(|name| {
            pods::summary_at(
                store,
                &ObjKey {
                    res: res("", "pods"),
                    ns: key.ns.clone(),
                    name,
                },
            )
        })
        .filter(|p| active(p) && selects(selector, p.pointer("/metadata/labels")))
        .filter(|p| {
            p.pointer("/status/podIP")
                .and_then(Value::as_str)
                .is_some_and(|ip| !ip.is_empty())
        })
        .collect();
    pods.sort_by(|a, b| {
        let ip = |p: &Value| {
            p.pointer("/status/podIP")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        ip(a).cmp(&ip(b))
    });
    let ports: Vec<Value> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let mut out = json!({"port": target_port(p, &pods)?,
                                 "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP"))});
            if let Some(n) = p
                .get("name")
                .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
            {
                out["name"] = n.clone();
            }
            Some(out)
        })
        .collect();
    let address = |p: &Value| json!({"ip": p.pointer("/status/podIP"), "nodeName": p.pointer("/spec/nodeName"), "targetRef": target_ref(p)});
    let (up, down): (Vec<_>, Vec<_>) = pods.iter().partition(|p| ready(p));
    let mut subset = Map::new();
    if !up.is_empty() {
        subset.insert("addresses".into(), up.iter().map(|p| address(p)).collect());
    }
    if !down.is_empty() {
        subset.insert(
            "notReadyAddresses".into(),
            down.iter().map(|p| address(p)).collect(),
        );
    }
    let subsets = if subset.is_empty() {
        None
    } else {
        subset.insert("ports".into(), json!(ports));
        Some(json!([subset]))
    };
    let mut labels = svc
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    write_endpoints(store, &ep_key, &svc, labels.clone(), subsets);

    labels[SERVICE_NAME] = json!(key.name);
    labels["endpointslice.kubernetes.io/managed-by"] = json!("endpointslice-controller.k8s.io");
    let endpoints: Vec<Value> = pods
        .iter()
        .map(|p| {
            let ok = ready(p);
            json!({"addresses": [p.pointer("/status/podIP")],
                   "conditions": {"ready": ok, "serving": ok, "terminating": false},
                   "nodeName": p.pointer("/spec/nodeName"), "targetRef": target_ref(p)})
        })
        .collect();
    let slice_ports: Vec<Value> = ports
        .iter()
        .map(|p| {
            let mut p = p.clone();
            if p.get("name").is_none() {
                p["name"] = json!("");
            }
            p
        })
        .collect();
    let slices = controlled(store, &svc, &res("discovery.k8s.io", "endpointslices"));
    match slices.first() {
        Some((k, current)) => {
            let mut wanted = current.clone();
            wanted["metadata"]["labels"] = labels;
            wanted["endpoints"] = json!(endpoints);
            wanted["ports"] = json!(slice_ports);
            update(store, k, current, wanted, false, MANAGER);
        }
        None => {
            let body = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"generateName": format!("{}-", key.name), "labels": labels,
                             "ownerReferences": controller_ref(&svc, "v1", "Service")},
                "addressType": "IPv4", "endpoints": endpoints, "ports": slice_ports});
            create(
                store,
                &res("discovery.k8s.io", "endpointslices"),
                &key.ns,
                body,
                MANAGER,
            );
        }
    }
}

fn write_endpoints(
    store: &mut Store,
    key: &ObjKey,
    svc: &Value,
    labels: Value,
    subsets: Option<Value>,
) {
    let mut labels = labels;
    labels["endpoints.kubernetes.io/managed-by"] = json!("endpoint-controller");
    let trigger = json!({TRIGGER: object::now_rfc3339()});
    match store.get(key) {
        Some(current) => {
            let mut wanted = current.clone();
            wanted["metadata"]["labels"] = labels;
            match subsets {
                Some(s) => wanted["subsets"] = s,
                None => {
                    if let Some(m) = wanted.as_object_mut() {
                        m.remove("subsets");
                    }
                }
            }
            if wanted != current {
                wanted["metadata"]["annotations"][TRIGGER] = trigger[TRIGGER].clone();
                update(store, key, &current, wanted, false, MANAGER);
            }
        }
        None => {
            let mut body = json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": object::name(svc), "labels": labels, "annotations": trigger}});
            if let Some(s) = subsets {
                body["subsets"] = s;
            }
            create(store, &key.res, &key.ns, body, MANAGER);
        }
    }
}
