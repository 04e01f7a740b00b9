//! A cleanup step that acts (contract 0.3.0): its children go through the judge and the apply
//! and prune of a reconcile while the finalizer is held, and a refused one is refused alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use weir_emulator::{Emulator, EmulatorConfig};

use super::invoke::{CallSlots, PluginError, Reconciler};
use super::{Controller, ControllerConfig};
use crate::metrics::Metrics;
use crate::plugin::test_info::{namespaced, owning_config_maps};
use crate::plugin::{
    ErrorKind, FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse,
    Requeue,
};
use crate::runtime::Informers;

const FINALIZER: &str = "test.weir.dev/scale-down";

/// A native plugin whose Services each own a ConfigMap standing in for a Deployment: `replicas`
/// is 3 while the Service lives; its cleanup asks for 0 and lets go once it observes 0.
struct ScaleDown {
    info: PluginInfo,
    /// Where the cleanup step puts its ConfigMap (`None`: the parent's namespace).
    namespace: Option<&'static str>,
    /// Whether a cleanup step observed the ConfigMap at 0 replicas.
    saw_zero: AtomicBool,
}

impl ScaleDown {
    fn new(name: &str, namespace: Option<&'static str>) -> Arc<Self> {
        let mut info = owning_config_maps(name, namespaced("", "Service", "services"));
        info.finalizer = Some(FINALIZER.into());
        Arc::new(Self {
            info,
            namespace,
            saw_zero: AtomicBool::new(false),
        })
    }

    fn pods(&self, parent: &str, replicas: &str) -> Result<Value, PluginError> {
        let parent: Value = serde_json::from_str(parent)
            .map_err(|e| PluginError::new(ErrorKind::Permanent, e.to_string()))?;
        let name = parent["metadata"]["name"].as_str().unwrap_or_default();
        let mut child = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("{name}-pods")},
            "data": {"replicas": replicas},
        });
        if let Some(namespace) = self.namespace {
            child["metadata"]["namespace"] = json!(namespace);
        }
        Ok(child)
    }
}

impl Reconciler for ScaleDown {
    fn info(&self) -> &PluginInfo {
        &self.info
    }
    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
        Ok(ReconcileResponse {
            children: vec![self.pods(&req.parent, "3")?],
            clusters: Vec::new(),
            status: None,
            requeue: Requeue::Done,
        })
    }
    fn finalize(&self, req: &FinalizeRequest) -> Result<FinalizeResponse, PluginError> {
        let zero = req
            .children
            .iter()
            .any(|c| serde_json::from_str::<Value>(c).is_ok_and(|c| c["data"]["replicas"] == "0"));
        self.saw_zero.fetch_or(zero, Ordering::SeqCst);
        Ok(FinalizeResponse {
            children: Some(vec![self.pods(&req.parent, "0")?]),
            clusters: Vec::new(),
            status: Some(json!({"phase": "ScalingDown"})),
            finalized: zero,
            requeue: Requeue::Done,
        })
    }
}

/// A fresh emulator and what the controllers on it share: the emulator, its client, the
/// metrics and the informer registry.
pub(super) async fn emulator_and_informers() -> (Emulator, Client, Arc<Metrics>, Arc<Informers>) {
    let emulator = Emulator::start(EmulatorConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let client = emulator.client();
    let metrics = Arc::new(Metrics::new());
    let informers = Informers::new(client.clone(), None, metrics.clone());
    (emulator, client, metrics, informers)
}

/// A controller for `plugin` on a fresh emulator, its workers not started: the emulator, its
/// client and the controller.
pub(super) async fn on_emulator(
    plugin: Arc<dyn Reconciler>,
) -> (Emulator, Client, Arc<Controller>) {
    let (emulator, client, metrics, informers) = emulator_and_informers().await;
    let controller = Arc::new(Controller::new(
        client.clone(),
        informers,
        plugin,
        CallSlots::new(4),
        metrics,
        ControllerConfig::default(),
    ));
    (emulator, client, controller)
}

/// Serves `plugin` on a fresh emulator; returns the emulator, its client and the controller.
async fn serve(plugin: Arc<ScaleDown>) -> (Emulator, Client, Arc<Controller>) {
    let served = on_emulator(plugin).await;
    tokio::spawn(served.2.clone().run_workers());
    served
}

/// Creates Service `name` in `default`; the Services' API.
pub(super) async fn create_service(client: &Client, name: &str) -> Api<DynamicObject> {
    let services = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        "default",
        &namespaced("", "Service", "services").api_resource(),
    );
    let service: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"ports": [{"port": 80}]},
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    services
}

/// Creates Service `name` in `default` and waits for its ConfigMap at 3 replicas.
async fn service_with_pods(client: &Client, name: &str) -> Api<DynamicObject> {
    let services = create_service(client, name).await;
    let cms = config_maps(client, "default");
    let pods = format!("{name}-pods");
    until("the ConfigMap at 3 replicas", || async {
        let cm = cms.get_opt(&pods).await.ok()??;
        (cm.data["data"]["replicas"] == "3").then_some(())
    })
    .await;
    services
}

/// Deletes Service `name` and waits until it is gone (every finalizer on it released).
async fn delete_until_gone(services: &Api<DynamicObject>, name: &str) {
    services
        .delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    until("the Service to be gone", || async {
        services.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

pub(super) fn config_maps(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        namespace,
        &namespaced("", "ConfigMap", "configmaps").api_resource(),
    )
}

pub(super) async fn until<T, F: Future<Output = Option<T>>>(
    what: &str,
    check: impl Fn() -> F,
) -> T {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(found) = check().await {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("waited 30 s for {what}"))
}

#[tokio::test]
async fn a_cleanup_step_that_acts_is_applied_while_the_finalizer_is_held_then_lets_go() {
    let plugin = ScaleDown::new("scale-down", None);
    let (_emulator, client, controller) = serve(plugin.clone()).await;
    let services = service_with_pods(&client, "web").await;
    until("the finalizer on the Service", || async {
        let held = services.get("web").await.ok()?.finalizers().to_vec();
        (held == [FINALIZER]).then_some(())
    })
    .await;

    delete_until_gone(&services, "web").await;
    assert!(
        plugin.saw_zero.load(Ordering::SeqCst),
        "the cleanup step's ConfigMap at 0 replicas was written before it let go"
    );
    controller.shutdown();
}

#[tokio::test]
async fn a_child_a_reconcile_could_not_have_is_refused_in_a_cleanup_answer_too() {
    let plugin = ScaleDown::new("scale-elsewhere", Some("kube-system"));
    let (_emulator, client, controller) = serve(plugin.clone()).await;
    // The reconcile's child is refused alike: the Service never gets its ConfigMap, but it
    // gets its finalizer, and its condition says why.
    let services = create_service(&client, "web").await;
    let refused_reconcile = until("the reconcile's refusal", || async {
        reconciled(&services.get("web").await.ok()?).filter(|(reason, _)| reason == "Refused")
    })
    .await;
    let judged = crate::answer::tests::judged("scale-elsewhere");

    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    until("the cleanup answer judged", || async {
        (crate::answer::tests::judged("scale-elsewhere") > judged).then_some(())
    })
    .await;
    let held = until("the deleting Service", || async {
        let live = services.get("web").await.ok()?;
        live.metadata.deletion_timestamp.is_some().then_some(live)
    })
    .await;
    assert_eq!(held.finalizers(), [FINALIZER], "the finalizer is held");
    let (reason, message) = reconciled(&held).unwrap_or_default();
    assert_eq!(reason, "Refused");
    assert_eq!(
        message, refused_reconcile.1,
        "refused with the same message"
    );
    assert!(!plugin.saw_zero.load(Ordering::SeqCst));
    let elsewhere = config_maps(&client, "kube-system");
    assert!(
        elsewhere
            .get_opt("web-pods")
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_none(),
        "nothing was written"
    );
    controller.shutdown();
}

/// The reason and message of the parent's `Reconciled` condition.
fn reconciled(parent: &DynamicObject) -> Option<(String, String)> {
    let conditions = parent.data["status"]["conditions"].as_array()?;
    let c = conditions.iter().find(|c| c["type"] == "Reconciled")?;
    Some((
        c["reason"].as_str()?.to_owned(),
        c["message"].as_str()?.to_owned(),
    ))
}

#[tokio::test]
async fn a_member_finalizer_left_from_a_run_with_clusters_is_released_by_a_host_without_them() {
    let plugin = ScaleDown::new("scale-down", None);
    let (_emulator, client, controller) = serve(plugin).await;
    let services = service_with_pods(&client, "web").await;
    // As a host started with `--clusters` would have left it.
    let patch = json!({"metadata": {"finalizers": [FINALIZER, super::members::MEMBERS_FINALIZER]}});
    services
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    delete_until_gone(&services, "web").await;
    controller.shutdown();
}
