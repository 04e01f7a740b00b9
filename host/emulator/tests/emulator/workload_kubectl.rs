//! kubectl's workload commands against the simulation: `get pods`, `rollout status`,
//! `rollout history`, `rollout undo`, `set image`, and `apply --prune`.

use std::path::Path;

use crate::kubectl_bin::Kubectl;
use crate::workload_controllers::simulated;

/// The revision numbers `kubectl rollout history` lists.
fn revisions(history: &str) -> Vec<u32> {
    history
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

/// The rows of a table kubectl printed, split on whitespace, header dropped.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

async fn kubectl_rolls_a_deployment_out_shows_its_history_and_undoes_it(kubectl: &Path) {
    let em = simulated(50).await;
    let k = Kubectl::with_binary(&em, kubectl);
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1",
        "--replicas=2",
    ])
    .await;
    let status = k
        .ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");

    let pods = rows(&k.ok(&["get", "pods", "-o", "wide"]).await);
    assert_eq!(pods.len(), 2, "{pods:?}");
    for row in &pods {
        assert!(row[0].starts_with("web-"), "{row:?}");
        assert_eq!(&row[1..4], ["1/1", "Running", "0"], "{row:?}");
        assert!(row[5].starts_with("10.244."), "{row:?}");
        assert_eq!(row[6], "weir-node", "{row:?}");
    }

    k.ok(&["set", "image", "deployment/web", "nginx=nginx:2"])
        .await;
    k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    let history = k.ok(&["rollout", "history", "deployment/web"]).await;
    assert_eq!(revisions(&history), [1, 2], "{history}");
    let image = || async {
        k.ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ])
        .await
    };
    assert_eq!(image().await, "nginx:2");

    let undo = k.ok(&["rollout", "undo", "deployment/web"]).await;
    assert!(undo.contains("rolled back"), "{undo}");
    assert_eq!(image().await, "nginx:1");
    k.ok(&["rollout", "status", "deployment/web", "--timeout=30s"])
        .await;
    let history = k.ok(&["rollout", "history", "deployment/web"]).await;
    assert_eq!(
        revisions(&history),
        [2, 3],
        "the undone revision 1 is now 3: {history}"
    );
    let revision_3 = k
        .ok(&["rollout", "history", "deployment/web", "--revision=3"])
        .await;
    assert!(revision_3.contains("nginx:1"), "{revision_3}");
    let pods = rows(&k.ok(&["get", "pods", "-o", "wide"]).await);
    assert_eq!(
        pods.len(),
        2,
        "the old ReplicaSet's Pods are gone: {pods:?}"
    );
    let images = k
        .ok(&[
            "get",
            "pods",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ])
        .await;
    assert_eq!(images, "nginx:1 nginx:1");
}

const PRUNED: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: keep, labels: {set: pruned}}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: drop, labels: {set: pruned}}
data: {a: "1"}
"#;

async fn kubectl_apply_prune_deletes_what_left_the_set(kubectl: &Path) {
    let em = simulated(50).await;
    let k = Kubectl::with_binary(&em, kubectl);
    let file = k.file("set.yaml", PRUNED);
    k.ok(&["apply", "--prune", "-l", "set=pruned", "-f", &file])
        .await;
    let keep_only = PRUNED.split("---").next().unwrap_or_default();
    k.file("set.yaml", keep_only);
    let out = k
        .ok(&["apply", "--prune", "-l", "set=pruned", "-f", &file])
        .await;
    assert!(out.contains("configmap/drop pruned"), "{out}");
    let names = k
        .ok(&[
            "get",
            "configmaps",
            "-l",
            "set=pruned",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
        .await;
    assert_eq!(names, "keep");
}

async fn kubectl_creates_a_job_and_waits_for_it_to_complete(kubectl: &Path) {
    let em = simulated(50).await;
    let k = Kubectl::with_binary(&em, kubectl);
    k.ok(&[
        "create",
        "job",
        "once",
        "--image=busybox:1.36",
        "--",
        "true",
    ])
    .await;
    k.ok(&[
        "wait",
        "--for=condition=Complete",
        "job/once",
        "--timeout=30s",
    ])
    .await;
    let jobs = rows(&k.ok(&["get", "jobs"]).await);
    assert_eq!(&jobs[0][..3], ["once", "Complete", "1/1"], "{jobs:?}");
    let pods = rows(&k.ok(&["get", "pods", "-l", "job-name=once"]).await);
    assert_eq!(&pods[0][1..3], ["0/1", "Completed"], "{pods:?}");
}

each_kubectl!(
    kubectl_rolls_a_deployment_out_shows_its_history_and_undoes_it,
    kubectl_apply_prune_deletes_what_left_the_set,
    kubectl_creates_a_job_and_waits_for_it_to_complete,
);
