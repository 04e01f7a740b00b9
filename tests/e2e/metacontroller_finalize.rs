//! A Metacontroller CompositeController whose `async` JavaScript finalize hook scales its
//! Deployment to zero before letting its parent go (contract 0.3.0, through the JavaScript
//! adapter), served by `weir dev` as a user runs it: the hook first answers the Deployment at
//! zero replicas with `finalized: false`, and `finalized: true` only once the observed
//! Deployment shows none left. The Deployment is at zero while the finalizer holds the WebApp,
//! and then the WebApp is gone.

use anyhow::{Context, Result};
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use tokio::task::JoinHandle;
use weir::plugin::ResourceKind;
use weir_e2e::weir_dev::WeirDev;
use weir_e2e::{CONVERGE, eventually, kinds};

const COMPONENT: &str = "metacontroller-scale-down-js.wasm";

/// The finalizer the adapter holds for a CompositeController named `web-app`.
const FINALIZER: &str = "metacontroller.weir.dev/web-app";

fn web_app() -> ResourceKind {
    ResourceKind {
        group: "example.weir.dev".into(),
        version: "v1alpha1".into(),
        kind: "WebApp".into(),
        plural: "webapps".into(),
        namespaced: true,
    }
}

/// Every state `api`'s object `name` takes, from now until it is deleted (the last entry, its
/// state when deleted, with `true`).
fn follow(api: Api<DynamicObject>, name: &str) -> JoinHandle<Vec<(bool, DynamicObject)>> {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    tokio::spawn(async move {
        let mut states = Vec::new();
        let mut events = watcher(api, config).boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                    states.push((false, o));
                }
                Ok(watcher::Event::Delete(o)) => {
                    states.push((true, o));
                    break;
                }
                _ => {}
            }
        }
        states
    })
}

/// The WebApp's `status.phase` and `status.replicasLeft`, if it was held by the plugin's
/// finalizer while being deleted.
fn held_status(app: &DynamicObject) -> Option<(String, i64)> {
    let held = app.metadata.deletion_timestamp.is_some() && app.finalizers() == [FINALIZER];
    let status = &app.data["status"];
    held.then(|| {
        (
            status["phase"].as_str().unwrap_or_default().to_owned(),
            status["replicasLeft"].as_i64().unwrap_or(-1),
        )
    })
}

#[tokio::test]
async fn an_async_finalize_hook_scales_the_deployment_to_zero_before_the_parent_goes() -> Result<()>
{
    let dir = tempfile::tempdir()?;
    let mut dev = WeirDev::start(dir.path(), COMPONENT, None)?;
    let client = dev.serving(&web_app()).await?;
    let apps: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &web_app().api_resource());
    let deployments: Api<DynamicObject> =
        Api::namespaced_with(client, "default", &kinds::deployment().api_resource());

    let app: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.weir.dev/v1alpha1", "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": {"image": "nginx:1.27", "replicas": 3},
    }))?;
    apps.create(&PostParams::default(), &app).await?;
    eventually("three replicas ready", CONVERGE, || async {
        let d = deployments.get_opt("shop").await.ok()??;
        (d.data["status"]["readyReplicas"] == 3).then_some(())
    })
    .await?;
    assert_eq!(apps.get("shop").await?.finalizers(), [FINALIZER]);

    // Every state of both, watched from before the deletion to their end.
    let (app_states, deployment_states) = (
        follow(apps.clone(), "shop"),
        follow(deployments.clone(), "shop"),
    );
    apps.delete("shop", &DeleteParams::default()).await?;
    let in_time = |what: &'static str, task| {
        let dev = &dev;
        async move {
            tokio::time::timeout(CONVERGE, task)
                .await
                .with_context(|| format!("{what} within {CONVERGE:?}; {}", dev.log()))
        }
    };
    let app_states = in_time("the WebApp to be gone", app_states).await??;
    let deployment_states = in_time("the Deployment to be collected", deployment_states).await??;

    // While the finalizer held the WebApp, the finalize hook's status went from scaling down
    // (three replicas observed) to stopped (none left): the hook's answers were applied then.
    let held: Vec<(String, i64)> = app_states
        .iter()
        .filter_map(|(_, a)| held_status(a))
        .collect();
    assert!(
        held.contains(&("ScalingDown".to_owned(), 3)),
        "the first step scaled down from three: {held:?}"
    );
    assert_eq!(
        held.last(),
        Some(&("Stopped".to_owned(), 0)),
        "the last step while held observed no replica left: {held:?}"
    );
    assert!(app_states.last().is_some_and(|(deleted, _)| *deleted));
    // The Deployment was at zero, spec and status, when the garbage collector took it.
    let (deleted, last) = deployment_states
        .last()
        .context("the Deployment's states")?;
    assert!(*deleted);
    assert_eq!(last.data["spec"]["replicas"], 0);
    assert_eq!(last.data["status"]["replicas"].as_i64().unwrap_or(0), 0);
    dev.check_running()?;
    Ok(())
}
