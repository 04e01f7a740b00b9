//! The simulated DaemonSet controller (one Pod on the one node, replaced on a template change,
//! the counts in status) and Pods run to completion by their `restartPolicy`, whoever owns them.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::eventually;
use crate::workload_controllers::simulated;

fn daemon_set(name: &str, image: &str) -> DaemonSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "agent", "image": image}]}}}
    }))
    .unwrap()
}

/// The DaemonSet's status counts, in the order the issue names them, once `numberReady` is 1.
async fn counts_when_ready(api: &Api<DaemonSet>, name: &str, generation: i64) -> [i32; 5] {
    eventually("the DaemonSet's Pod is ready", || async {
        let ds = api.get(name).await.unwrap();
        let s = ds.status?;
        (s.number_ready == 1 && s.observed_generation == Some(generation)).then(|| {
            [
                s.desired_number_scheduled,
                s.current_number_scheduled,
                s.number_ready,
                s.updated_number_scheduled.unwrap_or(0),
                s.number_available.unwrap_or(0),
            ]
        })
    })
    .await
}

#[tokio::test]
async fn a_daemon_set_runs_one_pod_on_the_node_and_replaces_it_when_its_template_changes() {
    let em = simulated(50).await;
    let daemon_sets: Api<DaemonSet> = Api::default_namespaced(em.client());
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    daemon_sets
        .create(&PostParams::default(), &daemon_set("agent", "agent:1"))
        .await
        .unwrap();
    assert_eq!(counts_when_ready(&daemon_sets, "agent", 1).await, [1; 5]);
    let listed = pods
        .list(&ListParams::default().labels("app=agent"))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 1);
    let first = &listed[0];
    assert_eq!(
        first.spec.as_ref().unwrap().node_name.as_deref(),
        Some("weir-node")
    );
    let owner = &first.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("DaemonSet", Some(true))
    );

    daemon_sets
        .patch(
            "agent",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}}})),
        )
        .await
        .unwrap();
    assert_eq!(counts_when_ready(&daemon_sets, "agent", 2).await, [1; 5]);
    let listed = pods
        .list(&ListParams::default().labels("app=agent"))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 1, "the old Pod is gone");
    assert_ne!(listed[0].metadata.uid, first.metadata.uid);
    assert_eq!(
        listed[0].spec.as_ref().unwrap().containers[0]
            .image
            .as_deref(),
        Some("agent:2")
    );
}

#[tokio::test]
async fn pods_that_must_not_restart_complete_whoever_owns_them() {
    let em = simulated(50).await;
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    for (name, policy) in [
        ("once", "Never"),
        ("retry", "OnFailure"),
        ("server", "Always"),
    ] {
        let pod = serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"restartPolicy": policy, "containers": [{"name": "main", "image": "busybox:1.36"}]}}))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let phases = eventually("every Pod has left Pending", || async {
        let mut phases = Vec::new();
        for name in ["once", "retry", "server"] {
            let p = pods.get(name).await.unwrap();
            let phase = p.status?.phase?;
            if phase == "Pending" {
                return None;
            }
            phases.push(phase);
        }
        Some(phases)
    })
    .await;
    assert_eq!(phases, ["Succeeded", "Succeeded", "Running"]);
    let once = pods.get("once").await.unwrap().status.unwrap();
    let terminated = once.container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!(
        (terminated.exit_code, terminated.reason.as_deref()),
        (0, Some("Completed"))
    );
}
