//! A shadowed reconcile judges each answer once: the applied version's answer is compared and
//! written from the same judgment, and the compared-only version's is judged beside it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kube::Api;
use kube::api::{DynamicObject, PostParams};
use serde_json::json;
use weir_emulator::{Emulator, EmulatorConfig};

use super::Rollouts;
use crate::metrics::Metrics;
use crate::plugin::{
    FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse, Requeue,
};
use crate::reconcile::invoke::{CallSlots, PluginError, Reconciler};
use crate::reconcile::{Controller, ControllerConfig};
use crate::rollout::{Phase, Rollout, RolloutConfig};
use crate::runtime::Informers;

/// The name both versions share; the judge counts answers by plugin name.
const NAME: &str = "judged-once";

/// A native plugin version that wants one labelled ConfigMap per parent and counts its calls.
struct Counting {
    info: PluginInfo,
    calls: AtomicU64,
}

impl Counting {
    fn version(version: &str) -> Arc<Self> {
        let services = crate::plugin::test_info::namespaced("", "Service", "services");
        let mut info = crate::plugin::test_info::owning_config_maps(NAME, services);
        info.version = version.into();
        Arc::new(Self {
            info,
            calls: AtomicU64::new(0),
        })
    }

    fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Reconciler for Counting {
    fn info(&self) -> &PluginInfo {
        &self.info
    }
    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let parent: serde_json::Value = serde_json::from_str(&req.parent)
            .map_err(|e| PluginError::new(crate::plugin::ErrorKind::Permanent, e.to_string()))?;
        let name = parent["metadata"]["name"].as_str().unwrap_or_default();
        Ok(ReconcileResponse {
            children: vec![json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("{name}-page"),
                    "labels": {"version": self.info.version}},
            })],
            clusters: Vec::new(),
            status: Some(json!({"page": format!("{name}-page")})),
            requeue: Requeue::Done,
        })
    }
    fn finalize(&self, _: &FinalizeRequest) -> Result<FinalizeResponse, PluginError> {
        Ok(FinalizeResponse::complete())
    }
}

#[tokio::test]
async fn a_shadowed_reconcile_judges_the_serving_and_the_candidate_answer_once_each() {
    let emulator = Emulator::start(EmulatorConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let client = emulator.client();
    let metrics = Arc::new(Metrics::new());
    let namespace = Some("default".to_owned());
    let informers = Informers::new(client.clone(), namespace.clone(), metrics.clone());
    let (serving, candidate) = (Counting::version("0.1.0"), Counting::version("0.2.0"));
    let config = ControllerConfig {
        namespace,
        ..ControllerConfig::default()
    };
    let controller = Arc::new(Controller::new(
        client.clone(),
        informers,
        serving.clone(),
        CallSlots::new(4),
        metrics,
        config,
    ));
    let rollout = Rollout::new(
        RolloutConfig::default(),
        format!("{NAME}@0.1.0"),
        (
            PathBuf::from("candidate.wasm"),
            "0.2.0".into(),
            "c0ffee".into(),
        ),
        Phase::Shadow,
    );
    let rollouts = Rollouts::new(controller.clone());
    rollouts.propose(candidate.clone(), Arc::new(rollout), None);
    let workers = tokio::spawn(controller.clone().run_workers());

    let api = Api::<DynamicObject>::namespaced_with(
        client,
        "default",
        &serving.info.parent.api_resource(),
    );
    for name in ["a", "b"] {
        let service: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"ports": [{"port": 80}]},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        api.create(&PostParams::default(), &service)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let compared = || rollouts.status().map_or(0, |r| r.compared);
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while compared() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "both parents were compared");
    // Reconciles in flight finish before the workers return: the counts are final.
    controller.shutdown();
    workers.await.unwrap_or_else(|e| panic!("{e}"));

    let answers = serving.calls() + candidate.calls();
    assert!(serving.calls() >= 2 && candidate.calls() >= 2, "{answers}");
    assert_eq!(
        serving.calls(),
        candidate.calls(),
        "every reconcile ran both versions"
    );
    assert_eq!(
        crate::answer::tests::judged(NAME),
        answers,
        "one judgment per answer"
    );
}
