//! An operator written with kube-runtime runs against the simulation unchanged: for each
//! labelled ConfigMap it creates a Job it owns, waits for the Job to be Complete (woken by the
//! Job's status change through `owns`), then writes the result back into the ConfigMap.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use crate::workload_controllers::simulated;
use crate::{configmap, eventually};

fn job_for(cm: &ConfigMap) -> Job {
    let mut job: Job = serde_json::from_value(json!({
        "metadata": {"name": format!("run-{}", cm.name_any())},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "work", "image": "busybox:1.36", "command": ["echo", "hi"]}]}}}
    }))
    .unwrap();
    job.metadata.owner_references = cm.controller_owner_ref(&()).map(|r| vec![r]);
    job
}

fn complete(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Complete" && c.status == "True")
}

/// Level-triggered: the Job exists, and once it is Complete the ConfigMap says so.
async fn reconcile(cm: Arc<ConfigMap>, client: Arc<kube::Client>) -> Result<Action, kube::Error> {
    let ns = cm.namespace().unwrap_or_default();
    let jobs: Api<Job> = Api::namespaced((*client).clone(), &ns);
    let name = format!("run-{}", cm.name_any());
    let job = match jobs.get_opt(&name).await? {
        Some(job) => job,
        None => jobs.create(&PostParams::default(), &job_for(&cm)).await?,
    };
    let done = cm.data.as_ref().and_then(|d| d.get("result")).is_some();
    if complete(&job) && !done {
        let succeeded = job.status.and_then(|s| s.succeeded).unwrap_or(0);
        let patch = json!({"data": {"result": format!("succeeded={succeeded}")}});
        Api::<ConfigMap>::namespaced((*client).clone(), &ns)
            .patch(
                &cm.name_any(),
                &PatchParams::apply("job-operator"),
                &Patch::Merge(patch),
            )
            .await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &kube::Error, _: Arc<kube::Client>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

#[tokio::test]
async fn a_kube_runtime_operator_owning_jobs_sees_them_complete() {
    let em = simulated(100).await;
    let client = em.client();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let controller = Controller::new(
        configmaps.clone(),
        watcher::Config::default().labels("work=yes"),
    )
    .owns(jobs.clone(), watcher::Config::default())
    .run(reconcile, error_policy, Arc::new(client.clone()))
    .for_each(|_| async {});
    let task = tokio::spawn(controller);

    for name in ["a", "b"] {
        configmap(name)
            .label("work", "yes")
            .create(&configmaps)
            .await;
    }
    configmap("ignored").create(&configmaps).await;
    for name in ["a", "b"] {
        let result = eventually("the result is written back", || async {
            let cm = configmaps.get(name).await.unwrap();
            cm.data?.get("result").cloned()
        })
        .await;
        assert_eq!(result, "succeeded=1");
        let job = jobs.get(&format!("run-{name}")).await.unwrap();
        assert!(complete(&job));
    }
    assert!(jobs.get_opt("run-ignored").await.unwrap().is_none());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let finished = pods
        .list(&ListParams::default().labels("job-name=run-a"))
        .await
        .unwrap()
        .items;
    assert_eq!(finished.len(), 1);
    assert_eq!(
        finished[0].status.as_ref().unwrap().phase.as_deref(),
        Some("Succeeded")
    );

    // Deleting the ConfigMap collects its Job and the Job's Pod.
    configmaps.delete("a", &Default::default()).await.unwrap();
    eventually("the Job and its Pod are collected", || async {
        let gone = jobs.get_opt("run-a").await.unwrap().is_none()
            && pods
                .list(&ListParams::default().labels("job-name=run-a"))
                .await
                .unwrap()
                .items
                .is_empty();
        gone.then_some(())
    })
    .await;
    task.abort();
}
