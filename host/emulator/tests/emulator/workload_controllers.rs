//! The simulated controllers and kubelet: ReplicaSets and Pods for Deployments, rollouts and
//! their history, Jobs run to completion, ordered StatefulSet Pods, Endpoints for Services.

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

use crate::{deployment, eventually};

/// An emulator whose Pods are ready `ms` milliseconds after they are created.
pub async fn simulated(ms: u64) -> Emulator {
    Emulator::start(EmulatorConfig {
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(ms),
        }),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

fn ready(p: &Pod) -> bool {
    p.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Running")
            && s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

fn annotation(meta: &kube::api::ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref()?.get(key).cloned()
}

async fn replica_sets(api: &Api<ReplicaSet>) -> Vec<ReplicaSet> {
    api.list(&ListParams::default()).await.unwrap().items
}

#[tokio::test]
async fn a_deployment_owns_a_replica_set_whose_pods_run_and_a_service_lists_them() {
    let em = simulated(100).await;
    let deployments: Api<Deployment> = Api::default_namespaced(em.client());
    let services: Api<Service> = Api::default_namespaced(em.client());
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    let d = deployments
        .create(&PostParams::default(), &deployment("web", 3))
        .await
        .unwrap();
    let svc = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}))
    .unwrap();
    services.create(&PostParams::default(), &svc).await.unwrap();

    let running = eventually("three ready Pods", || async {
        let list = pods.list(&ListParams::default()).await.unwrap().items;
        (list.len() == 3 && list.iter().all(ready)).then_some(list)
    })
    .await;
    let rs_api: Api<ReplicaSet> = Api::default_namespaced(em.client());
    let sets = replica_sets(&rs_api).await;
    assert_eq!(sets.len(), 1);
    let rs = &sets[0];
    let hash = rs.metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(
        rs.metadata.name.as_deref(),
        Some(format!("web-{hash}").as_str())
    );
    assert_eq!(
        annotation(&rs.metadata, "deployment.kubernetes.io/revision").as_deref(),
        Some("1")
    );
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("Deployment", d.metadata.uid.as_deref().unwrap(), Some(true))
    );
    for p in &running {
        let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(owner.name, rs.metadata.name.clone().unwrap());
        assert!(
            p.metadata
                .name
                .as_ref()
                .unwrap()
                .starts_with(&format!("web-{hash}-"))
        );
        assert_eq!(
            p.metadata.labels.as_ref().unwrap()["pod-template-hash"],
            hash
        );
        assert_eq!(
            p.spec.as_ref().unwrap().node_name.as_deref(),
            Some("weir-node")
        );
        assert!(
            p.status
                .as_ref()
                .unwrap()
                .pod_ip
                .as_ref()
                .is_some_and(|ip| ip.starts_with("10.244."))
        );
    }

    let d = eventually("the Deployment is complete", || async {
        let d = deployments.get("web").await.unwrap();
        (d.status.as_ref()?.available_replicas == Some(3)).then_some(d)
    })
    .await;
    assert_eq!(
        annotation(&d.metadata, "deployment.kubernetes.io/revision").as_deref(),
        Some("1")
    );
    let status = d.status.unwrap();
    assert_eq!(
        (
            status.replicas,
            status.updated_replicas,
            status.ready_replicas
        ),
        (Some(3), Some(3), Some(3))
    );

    let endpoints: Api<Endpoints> = Api::default_namespaced(em.client());
    let ep = eventually("three endpoint addresses", || async {
        let ep = endpoints.get_opt("web").await.unwrap()?;
        let subsets = ep.subsets.clone()?;
        (subsets[0].addresses.as_ref()?.len() == 3).then_some(subsets)
    })
    .await;
    assert_eq!(ep[0].ports.as_ref().unwrap()[0].port, 8080);
    let mut ips: Vec<String> = running
        .iter()
        .map(|p| p.status.clone().unwrap().pod_ip.unwrap())
        .collect();
    ips.sort();
    let mut listed: Vec<String> = ep[0]
        .addresses
        .iter()
        .flatten()
        .map(|a| a.ip.clone())
        .collect();
    listed.sort();
    assert_eq!(listed, ips);
    let slices: Api<EndpointSlice> = Api::default_namespaced(em.client());
    let slice = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
        .await
        .unwrap()
        .items;
    assert_eq!(slice.len(), 1);
    assert_eq!(slice[0].endpoints.len(), 3);
    assert!(
        slice[0]
            .endpoints
            .iter()
            .all(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
    );

    // Scaling down removes Pods and their addresses.
    deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    eventually("one endpoint address", || async {
        let ep = endpoints.get("web").await.unwrap();
        (ep.subsets?[0].addresses.as_ref()?.len() == 1).then_some(())
    })
    .await;
    assert_eq!(
        pods.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test]
async fn a_rollout_scales_old_replica_sets_down_and_keeps_only_the_history_limit() {
    let em = simulated(20).await;
    let deployments: Api<Deployment> = Api::default_namespaced(em.client());
    let rs_api: Api<ReplicaSet> = Api::default_namespaced(em.client());
    let mut d = deployment("web", 2);
    d.spec.as_mut().unwrap().revision_history_limit = Some(1);
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    for (revision, image) in [(2, "nginx:2"), (3, "nginx:3")] {
        eventually("the rollout completes", || async {
            let d = deployments.get("web").await.unwrap();
            let s = d.status?;
            (s.observed_generation == d.metadata.generation
                && s.updated_replicas == Some(2)
                && s.replicas == Some(2)
                && s.available_replicas == Some(2))
            .then_some(())
        })
        .await;
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}});
        deployments
            .patch("web", &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .unwrap();
        let d = eventually("the new revision", || async {
            let d = deployments.get("web").await.unwrap();
            (annotation(&d.metadata, "deployment.kubernetes.io/revision")
                == Some(revision.to_string()))
            .then_some(d)
        })
        .await;
        assert_eq!(d.metadata.generation, Some(revision));
    }
    let sets = eventually(
        "the oldest ReplicaSet is deleted, the previous one scaled to 0",
        || async {
            let sets = replica_sets(&rs_api).await;
            let replicas: Vec<(Option<String>, Option<i32>)> = sets
                .iter()
                .map(|rs| {
                    (
                        annotation(&rs.metadata, "deployment.kubernetes.io/revision"),
                        rs.spec.as_ref().and_then(|s| s.replicas),
                    )
                })
                .collect();
            (sets.len() == 2
                && replicas.contains(&(Some("2".into()), Some(0)))
                && replicas.contains(&(Some("3".into()), Some(2))))
            .then_some(sets)
        },
    )
    .await;
    let images: Vec<String> = sets
        .iter()
        .map(|rs| {
            rs.spec
                .clone()
                .unwrap()
                .template
                .unwrap()
                .spec
                .unwrap()
                .containers[0]
                .image
                .clone()
                .unwrap()
        })
        .collect();
    assert!(images.contains(&"nginx:2".to_string()) && images.contains(&"nginx:3".to_string()));
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    let pods = eventually("only the new Pods remain", || async {
        let list = pods.list(&ListParams::default()).await.unwrap().items;
        (list.len() == 2).then_some(list)
    })
    .await;
    assert!(
        pods.iter()
            .all(|p| p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("nginx:3"))
    );
}

#[tokio::test]
async fn deleting_a_deployment_collects_its_replica_sets_and_pods() {
    let em = simulated(20).await;
    let deployments: Api<Deployment> = Api::default_namespaced(em.client());
    deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    eventually("two Pods", || async {
        (pods.list(&ListParams::default()).await.unwrap().items.len() == 2).then_some(())
    })
    .await;
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("no Pods and no ReplicaSets", || async {
        let rs_api: Api<ReplicaSet> = Api::default_namespaced(em.client());
        (pods
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
            && replica_sets(&rs_api).await.is_empty())
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_job_runs_its_pods_to_completion() {
    let em = simulated(50).await;
    let jobs: Api<Job> = Api::default_namespaced(em.client());
    let job = serde_json::from_value(json!({"metadata": {"name": "once"},
        "spec": {"completions": 2, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "work", "image": "busybox:1.36", "command": ["true"]}]}}}}))
    .unwrap();
    let created = jobs.create(&PostParams::default(), &job).await.unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let spec = created.spec.unwrap();
    assert_eq!((spec.parallelism, spec.backoff_limit), (Some(1), Some(6)));
    assert_eq!(
        spec.selector.unwrap().match_labels.unwrap()["batch.kubernetes.io/controller-uid"],
        uid
    );
    let done = eventually("the Job is Complete", || async {
        let j = jobs.get("once").await.unwrap();
        let complete = j
            .status
            .as_ref()?
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Complete" && c.status == "True");
        complete.then_some(j)
    })
    .await;
    let status = done.status.unwrap();
    assert_eq!((status.succeeded, status.active), (Some(2), None));
    assert!(status.completion_time.is_some() && status.start_time.is_some());
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    let list = pods
        .list(&ListParams::default().labels("job-name=once"))
        .await
        .unwrap()
        .items;
    assert_eq!(list.len(), 2);
    assert!(
        list.iter()
            .all(|p| p.status.as_ref().unwrap().phase.as_deref() == Some("Succeeded"))
    );
}

#[tokio::test]
async fn a_stateful_set_creates_its_pods_in_order() {
    let em = simulated(100).await;
    let sets: Api<StatefulSet> = Api::default_namespaced(em.client());
    let sts = serde_json::from_value(json!({"metadata": {"name": "db"},
        "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}}}}))
    .unwrap();
    sets.create(&PostParams::default(), &sts).await.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(em.client());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let early: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(early, ["db-0"], "db-1 waits until db-0 is ready");
    let s = eventually("three ready replicas", || async {
        let s = sets.get("db").await.unwrap().status?;
        (s.ready_replicas == Some(3)).then_some(s)
    })
    .await;
    assert_eq!(s.replicas, 3);
    let mut names: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    assert_eq!(names, ["db-0", "db-1", "db-2"]);
    sets.patch_scale(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    eventually("only db-0 is left", || async {
        let names: Vec<String> = pods
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        (names == ["db-0"]).then_some(())
    })
    .await;
}
