//! The Spread's logic, natively, through the SDK's own JSON path.

#![expect(
    clippy::unwrap_used,
    reason = "a test should stop loudly at the first unexpected error"
)]

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use weir_guest_sdk::{Child, testing};

use super::*;

fn spread(clusters: &[&str]) -> Spread {
    let mut spread = Spread::new(
        "web",
        SpreadSpec {
            image: "nginx:1.27".into(),
            replicas: 2,
            clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
        },
    );
    spread.metadata.namespace = Some("shop".into());
    spread
}

fn ready(spread: &Spread, replicas: i32) -> Deployment {
    let mut live = deployment(spread);
    live.status = Some(DeploymentStatus {
        ready_replicas: Some(replicas),
        ..DeploymentStatus::default()
    });
    live
}

#[test]
fn each_named_cluster_gets_the_same_deployment_and_none_stays_in_the_hub() {
    let spread = spread(&["member-b", "member-a", "member-b"]);
    let out =
        testing::reconcile_in_cluster::<SpreadReconciler>(&spread, "hub", vec![], vec![]).unwrap();
    assert_eq!(
        out.children.len(),
        2,
        "member-b is named twice, placed once"
    );
    for cluster in ["member-a", "member-b"] {
        let placed = out.children.in_cluster(cluster).get::<Deployment>("web");
        assert_eq!(placed.unwrap(), Some(deployment(&spread)), "in {cluster}");
    }
    assert!(out.children.get::<Deployment>("web").unwrap().is_none());
    assert_eq!(out.status.unwrap()["ready"], "0/2");
}

#[test]
fn the_status_reads_each_clusters_own_deployment() {
    let spread = spread(&["member-a", "member-b"]);
    let observed = vec![
        Child::from(ready(&spread, 2)).in_cluster("member-a"),
        Child::from(ready(&spread, 1)).in_cluster("member-b"),
        // The hub's own Deployment of that name is not the workload's.
        Child::from(ready(&spread, 9)),
    ];
    let out = testing::reconcile_in_cluster::<SpreadReconciler>(&spread, "hub", observed, vec![])
        .unwrap();
    let status = out.status.unwrap();
    assert_eq!(status["clusters"][0]["readyReplicas"], 2);
    assert_eq!(status["clusters"][1]["readyReplicas"], 1);
    assert_eq!(status["ready"], "1/2");
}

#[test]
fn its_own_answer_observed_gives_the_same_answer() {
    let spread = spread(&["member-a", "member-c"]);
    let first =
        testing::reconcile_in_cluster::<SpreadReconciler>(&spread, "hub", vec![], vec![]).unwrap();
    let second = testing::reconcile_in_cluster::<SpreadReconciler>(
        &spread,
        "hub",
        first.as_observed(),
        vec![],
    )
    .unwrap();
    assert_eq!(first, second);
}

#[test]
fn no_cluster_is_a_permanent_error() {
    let err =
        testing::reconcile_in_cluster::<SpreadReconciler>(&spread(&[]), "hub", vec![], vec![])
            .unwrap_err();
    assert!(!err.is_transient());
    assert!(err.message().contains("spec.clusters"), "{}", err.message());
}
