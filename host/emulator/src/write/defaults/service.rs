//! Service defaults and the allocation of cluster IPs and node ports.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::{each_object, object_at, set_if_empty};
use crate::store::Store;
use crate::store::allocations::NODE_PORTS;

/// `SetDefaults_Service` (`pkg/apis/core/v1/defaults.go`): type `ClusterIP`, sessionAffinity
/// `None` (ClientIP gets a 10800 s timeout), port protocol `TCP`, targetPort = port,
/// internalTrafficPolicy `Cluster`, externalTrafficPolicy `Cluster` and
/// allocateLoadBalancerNodePorts `true` where they apply. Then what the service REST storage
/// allocates (`pkg/registry/core/service/storage/alloc.go`): a cluster IP from the service CIDR
/// with `clusterIPs`, `ipFamilies: [IPv4]`, `ipFamilyPolicy: SingleStack`, and node ports for
/// NodePort and LoadBalancer Services. On update, allocated values the new spec leaves out are
/// kept from `old` (`patchAllocatedValues`). A new Service's status is `{loadBalancer: {}}`.
pub fn service(obj: &mut Value, store: &Store, old: Option<&Value>) {
    let Some(m) = obj.as_object_mut() else { return };
    let spec = object_at(m, "spec");
    set_if_empty(spec, "type", json!("ClusterIP"));
    set_if_empty(spec, "sessionAffinity", json!("None"));
    if spec.get("sessionAffinity") == Some(&json!("ClientIP")) {
        let config = object_at(spec, "sessionAffinityConfig");
        let client_ip = object_at(config, "clientIP");
        set_if_empty(client_ip, "timeoutSeconds", json!(10800));
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    for p in each_object(spec, "ports") {
        set_if_empty(p, "protocol", json!("TCP"));
        let target_unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if target_unset && let Some(port) = p.get("port").cloned() {
            p.insert("targetPort".into(), port);
        }
    }
    if ty == "ExternalName" {
        return;
    }
    set_if_empty(spec, "internalTrafficPolicy", json!("Cluster"));
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer") {
        set_if_empty(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        set_if_empty(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    let old_spec = old.and_then(|o| o.get("spec"));
    keep_allocated(spec, old_spec);
    if spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let ip = store.allocations().free_cluster_ip();
        spec.insert("clusterIP".into(), json!(ip));
    }
    if let Some(ip) = spec.get("clusterIP").cloned() {
        set_if_empty(spec, "clusterIPs", json!([ip]));
    }
    set_if_empty(spec, "ipFamilies", json!(["IPv4"]));
    set_if_empty(spec, "ipFamilyPolicy", json!("SingleStack"));
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer") {
        let allocations = store.allocations();
        // Ports this Service names itself, besides those other Services hold.
        let mut taken: BTreeSet<u32> = each_object(spec, "ports")
            .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
            .filter_map(|n| u32::try_from(n).ok())
            .collect();
        for p in each_object(spec, "ports") {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                continue;
            }
            let mut from = *NODE_PORTS.start();
            while let Some(port) = allocations.free_node_port(from) {
                from = port + 1;
                if taken.insert(port) {
                    p.insert("nodePort".into(), json!(port));
                    break;
                }
            }
        }
    }
    let status = object_at(m, "status");
    set_if_empty(status, "loadBalancer", json!({}));
}

/// Keep the previous cluster IPs, families and node ports when an update leaves them out.
fn keep_allocated(spec: &mut Map<String, Value>, old: Option<&Value>) {
    let Some(old) = old else { return };
    for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if let Some(v) = old.get(key) {
            set_if_empty(spec, key, v.clone());
        }
    }
    let old_ports = old.get("ports").and_then(Value::as_array);
    for p in each_object(spec, "ports") {
        if p.get("nodePort").is_some() {
            continue;
        }
        let same = old_ports
            .into_iter()
            .flatten()
            .find(|o| o.get("port") == p.get("port") && o.get("protocol") == p.get("protocol"));
        if let Some(n) = same.and_then(|o| o.get("nodePort")) {
            p.insert("nodePort".into(), n.clone());
        }
    }
}
