use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Endpoints, Event, Service};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent};
use serde_json::json;
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

use crate::{deployment, emulator, eventually};

fn condition(d: &Deployment, kind: &str) -> Option<String> {
    d.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
}

/// An emulator whose simulated Pods turn Ready 300 ms after they are created.
async fn simulated() -> Emulator {
    let config = EmulatorConfig {
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(300),
        }),
        ..EmulatorConfig::default()
    };
    Emulator::start(config).await.unwrap()
}

/// The Service `web`, selecting the Pods labelled `app: web`.
async fn create_web_service(services: &Api<Service>) {
    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
}

/// The addresses an Endpoints object lists, over its subsets.
fn address_count(ep: &Endpoints) -> usize {
    ep.subsets
        .iter()
        .flatten()
        .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
        .sum()
}

#[tokio::test]
async fn deployments_become_available_after_the_configured_delay() {
    let em = simulated().await;
    let api: Api<Deployment> = Api::default_namespaced(em.client());
    api.create(&PostParams::default(), &deployment("web", 3))
        .await
        .unwrap();
    let progressing = eventually("observedGeneration", || async {
        let d = api.get("web").await.unwrap();
        (d.status.as_ref().and_then(|s| s.observed_generation) == Some(1)).then_some(d)
    })
    .await;
    assert_eq!(
        condition(&progressing, "Available").as_deref(),
        Some("False")
    );
    let ready = eventually("Available", || async {
        let d = api.get("web").await.unwrap();
        (condition(&d, "Available").as_deref() == Some("True")).then_some(d)
    })
    .await;
    let status = ready.status.unwrap();
    assert_eq!(
        (
            status.replicas,
            status.ready_replicas,
            status.available_replicas,
            status.updated_replicas
        ),
        (Some(3), Some(3), Some(3), Some(3))
    );

    api.patch_scale(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await
    .unwrap();
    let scaled = eventually("5 available", || async {
        let d = api.get("web").await.unwrap();
        (d.status.as_ref().and_then(|s| s.available_replicas) == Some(5)).then_some(d)
    })
    .await;
    assert_eq!(scaled.metadata.generation, Some(2));
    assert_eq!(scaled.status.unwrap().observed_generation, Some(2));
}

#[tokio::test]
async fn without_simulation_deployments_keep_the_empty_status_a_new_one_has() {
    let em = emulator().await;
    let api: Api<Deployment> = Api::default_namespaced(em.client());
    api.create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = api.get("web").await.unwrap().status;
    assert_eq!(status, Some(Default::default()));
    let scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(1));
}

#[tokio::test]
async fn strategic_merge_patch_merges_containers_by_name() {
    let em = emulator().await;
    let api: Api<Deployment> = Api::default_namespaced(em.client());
    api.create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "nginx:2"}, {"name": "sidecar", "image": "busybox"}]}}}});
    let d = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let containers: Vec<(String, Option<String>)> = d
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| (c.name, c.image))
        .collect();
    assert_eq!(
        containers,
        vec![
            ("app".into(), Some("nginx:2".into())),
            ("sidecar".into(), Some("busybox".into()))
        ]
    );
}

#[tokio::test]
async fn leases_and_both_event_apis_are_served_from_one_event_store() {
    let em = emulator().await;
    let leases: Api<Lease> = Api::default_namespaced(em.client());
    let lease = leases
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})).unwrap())
        .await
        .unwrap();
    let mut taken = lease.clone();
    taken.spec.as_mut().unwrap().holder_identity = Some("b".into());
    leases
        .replace("leader", &PostParams::default(), &taken)
        .await
        .unwrap();
    assert!(
        leases
            .replace("leader", &PostParams::default(), &lease)
            .await
            .is_err(),
        "stale lease update must conflict"
    );
    let core: Api<Event> = Api::default_namespaced(em.client());
    core.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "e1"}, "reason": "Hi", "involvedObject": {"kind": "Pod", "name": "p"}})).unwrap()).await.unwrap();
    let new: Api<k8s_openapi::api::events::v1::Event> = Api::default_namespaced(em.client());
    new.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "e2"}, "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "weir", "reportingInstance": "x", "action": "Reconcile", "reason": "Hi", "type": "Normal"})).unwrap()).await.unwrap();
    assert_eq!(core.list(&Default::default()).await.unwrap().items.len(), 2);
    assert_eq!(new.list(&Default::default()).await.unwrap().items.len(), 2);
}

/// Every value `read` gives of the objects a watch of `api` shows from `version` on, until the
/// task is aborted.
fn seen<K, T>(
    api: Api<K>,
    version: String,
    read: fn(&K) -> T,
) -> (tokio::task::JoinHandle<()>, Arc<Mutex<Vec<T>>>)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    T: Send + 'static,
{
    let values = Arc::new(Mutex::new(Vec::new()));
    let into = values.clone();
    let task = tokio::spawn(async move {
        let params = kube::api::WatchParams::default().disable_bookmarks();
        let Ok(stream) = api.watch(&params, &version).await else {
            return;
        };
        let mut stream = stream.boxed();
        while let Ok(Some(event)) = stream.try_next().await {
            if let WatchEvent::Added(o) | WatchEvent::Modified(o) = event {
                into.lock().unwrap().push(read(&o));
            }
        }
    });
    (task, values)
}

#[tokio::test]
async fn pods_turning_ready_together_make_one_round_of_status_writes() {
    let em = simulated().await;
    let deployments: Api<Deployment> = Api::default_namespaced(em.client());
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(em.client());
    let endpoints: Api<Endpoints> = Api::default_namespaced(em.client());
    let services: Api<Service> = Api::default_namespaced(em.client());
    create_web_service(&services).await;
    let version = replica_sets
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let (rs_task, ready_counts) = seen(replica_sets, version.clone(), |rs: &ReplicaSet| {
        rs.status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0)
    });
    let (ep_task, addresses) = seen(endpoints, version, address_count);
    deployments
        .create(&PostParams::default(), &deployment("web", 3))
        .await
        .unwrap();
    eventually("Available", || async {
        let d = deployments.get("web").await.unwrap();
        (condition(&d, "Available").as_deref() == Some("True")).then_some(())
    })
    .await;
    eventually("the Endpoints of three Pods", || async {
        addresses.lock().unwrap().contains(&3).then_some(())
    })
    .await;
    rs_task.abort();
    ep_task.abort();
    let ready_counts = ready_counts.lock().unwrap().clone();
    let addresses = addresses.lock().unwrap().clone();
    assert!(
        ready_counts.iter().all(|n| *n == 0 || *n == 3) && ready_counts.contains(&3),
        "the ReplicaSet's readyReplicas went from 0 to 3 at once: {ready_counts:?}"
    );
    assert!(
        addresses.iter().all(|n| *n == 0 || *n == 3),
        "the Endpoints went from no address to three at once: {addresses:?}"
    );
}

/// The changes stored for each workload resource since `before`, as `(resource, change, count)`.
fn changes_since(
    em: &Emulator,
    before: &[weir_emulator::StoredWrites],
) -> Vec<(String, &'static str, u64)> {
    let mut out: Vec<_> = em
        .stored_writes()
        .into_iter()
        .filter_map(|w| {
            let was = before
                .iter()
                .find(|b| (&b.group, &b.resource, b.change) == (&w.group, &w.resource, w.change))
                .map_or(0, |b| b.count);
            (w.count > was).then(|| (w.resource, w.change, w.count - was))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_deployment_and_its_service_converge_in_one_write_per_step() {
    let em = simulated().await;
    let deployments: Api<Deployment> = Api::default_namespaced(em.client());
    let endpoints: Api<Endpoints> = Api::default_namespaced(em.client());
    let services: Api<Service> = Api::default_namespaced(em.client());
    let before = em.stored_writes();
    create_web_service(&services).await;
    deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .unwrap();
    eventually("Available, with the Endpoints of two Pods", || async {
        let d = deployments.get("web").await.unwrap();
        let ep = endpoints.get_opt("web").await.unwrap()?;
        (condition(&d, "Available").as_deref() == Some("True") && address_count(&ep) == 2)
            .then_some(())
    })
    .await;
    // Settled: nothing more is written.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let step = |resource: &str, change, count| (resource.to_string(), change, count);
    assert_eq!(
        changes_since(&em, &before),
        vec![
            // The client's create; its revision; its first status, with the new ReplicaSet's
            // two Pods already counted; Available.
            step("deployments", "ADDED", 1),
            step("deployments", "MODIFIED", 3),
            // Created without addresses; both Pods' addresses at once.
            step("endpoints", "ADDED", 1),
            step("endpoints", "MODIFIED", 1),
            step("endpointslices", "ADDED", 1),
            step("endpointslices", "MODIFIED", 1),
            // Each Pod created, Pending (the kubelet's first status), Running and Ready.
            step("pods", "ADDED", 2),
            step("pods", "MODIFIED", 4),
            // Created; its status with two Pods; both Ready at once.
            step("replicasets", "ADDED", 1),
            step("replicasets", "MODIFIED", 2),
            step("services", "ADDED", 1),
        ]
    );
}
