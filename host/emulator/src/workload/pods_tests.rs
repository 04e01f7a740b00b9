use serde_json::json;

use super::*;
use crate::workload::{active, controller_of, ready};

fn full_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-abc", "namespace": "n", "uid": "u1", "labels": {"app": "web"},
            "creationTimestamp": "2026-12-07T10:00:00Z", "deletionTimestamp": null,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                 "uid": "rs1", "controller": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {
            "nodeName": "weir-node", "restartPolicy": "Always",
            "containers": [{"name": "app", "image": "nginx", "env": [{"name": "A", "value": "b"}],
                            "ports": [{"name": "http", "containerPort": 80}]}],
        },
        "status": {
            "phase": "Running", "hostIP": "172.18.0.2", "podIP": "10.244.0.3",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "ready": true}],
        },
    })
}

#[test]
fn a_summary_holds_only_the_fields_the_controllers_read_where_the_pod_holds_them() {
    let pod = full_pod();
    let seen = summary(&Stored::new(&pod));
    assert_eq!(
        seen,
        json!({
            "metadata": {
                "name": "web-abc", "namespace": "n", "uid": "u1", "labels": {"app": "web"},
                "creationTimestamp": "2026-12-07T10:00:00Z",
                "ownerReferences": pod["metadata"]["ownerReferences"],
            },
            "spec": {
                "nodeName": "weir-node", "restartPolicy": "Always",
                "containers": [{"name": "app", "ports": [{"name": "http", "containerPort": 80}]}],
            },
            "status": {
                "phase": "Running", "hostIP": "172.18.0.2", "podIP": "10.244.0.3",
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        })
    );
    // The readers answer the same of the summary as of the Pod.
    assert_eq!(ready(&seen), ready(&pod));
    assert_eq!(active(&seen), active(&pod));
    assert_eq!(controller_of(&seen), controller_of(&pod));
}

#[test]
fn a_pod_being_deleted_or_not_ready_reads_so_in_its_summary() {
    let mut pod = full_pod();
    pod["metadata"]["deletionTimestamp"] = json!("2026-12-07T10:01:00Z");
    pod["status"]["conditions"][0]["status"] = json!("False");
    let seen = summary(&Stored::new(&pod));
    assert!(!active(&seen));
    assert!(!ready(&seen));
}

#[test]
fn a_pod_that_does_not_read_as_a_summary_is_read_in_full() {
    let mut pod = full_pod();
    pod["spec"]["containers"] = json!("not a list");
    assert_eq!(summary(&Stored::new(&pod)), pod);
}

#[test]
fn what_a_pods_readers_count_ignores_its_pending_status_and_sees_it_turn_ready() {
    let counted_of = |pod: &Value| counted(&Stored::new(pod));
    let mut created = full_pod();
    created["status"] = json!({});
    let mut pending = created.clone();
    pending["status"] = json!({"phase": "Pending", "hostIP": "172.18.0.2",
                               "containerStatuses": [{"name": "app", "ready": false}]});
    assert_eq!(counted_of(&created), counted_of(&pending));
    let running = full_pod();
    assert!(counted_of(&running).ready);
    assert_ne!(counted_of(&pending), counted_of(&running));
    let mut deleting = running.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-12-07T10:05:00Z");
    assert!(counted_of(&deleting).deleting && !counted_of(&running).deleting);
}
