//! A Metacontroller CompositeController whose `async` JavaScript finalize hook scales its
//! Deployment to zero before letting its parent go (contract 0.3.0, through the JavaScript
//! adapter), served by `weir dev` as a user runs it: the hook first answers the Deployment at
//! zero replicas with `finalized: false`, and `finalized: true` only once the observed
//! Deployment shows none left. The Deployment is at zero while the finalizer holds the WebApp,
//! and then the WebApp is gone.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;
use weir::plugin::ResourceKind;
use weir_e2e::weir_run::WeirRun;
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

/// `weir dev --plugin DIR/COMPONENT` as a child process, killed when dropped.
struct WeirDev(Child);

impl WeirDev {
    fn start(dir: &Path) -> Result<WeirDev> {
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins)?;
        let built = weir_e2e::built(COMPONENT);
        std::fs::copy(&built, plugins.join(COMPONENT))
            .with_context(|| format!("copying {} (run plugins/build.sh all)", built.display()))?;
        let log = std::fs::File::create(dir.join("weir-dev.log"))?;
        let child = Command::new(WeirRun::debug_binary()?)
            .arg("--cache-dir")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugin-cache"))
            .args(["dev", "--plain", "--ready-after-ms", "100", "--plugin"])
            .arg(plugins.join(COMPONENT))
            .arg("--kubeconfig")
            .arg(dir.join("kubeconfig"))
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting weir dev")?;
        Ok(WeirDev(child))
    }

    fn check_running(&mut self, dir: &Path) -> Result<()> {
        if let Some(status) = self.0.try_wait()? {
            bail!("weir dev exited ({status}); {}", dev_log(dir));
        }
        Ok(())
    }
}

/// What `weir dev` logged, for a failure's message.
fn dev_log(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join("weir-dev.log")).unwrap_or_default();
    format!("weir dev's log:\n{log}")
}

impl Drop for WeirDev {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A client of `weir dev`'s emulator once the plugin is served (its CRD installed by it).
async fn served(dev: &mut WeirDev, dir: &Path) -> Result<Client> {
    let kubeconfig = dir.join("kubeconfig");
    // A JavaScript component compiles once into the shared cache; the first start waits for it.
    for _ in 0..600 {
        dev.check_running(dir)?;
        if kubeconfig.exists()
            && let Ok(client) =
                weir::run::client(Some(&kubeconfig), weir::client::ClientLimits::default()).await
        {
            let apps: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), "default", &web_app().api_resource());
            if apps.list(&Default::default()).await.is_ok() {
                return Ok(client);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("weir dev did not serve WebApps within two minutes")
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
    let mut dev = WeirDev::start(dir.path())?;
    let client = served(&mut dev, dir.path()).await?;
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
    let log_dir = dir.path().to_owned();
    let in_time = |what: &'static str, task| {
        let log_dir = log_dir.clone();
        async move {
            tokio::time::timeout(CONVERGE, task)
                .await
                .with_context(|| format!("{what} within {CONVERGE:?}; {}", dev_log(&log_dir)))
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
    dev.check_running(dir.path())?;
    Ok(())
}
