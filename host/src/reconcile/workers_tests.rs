//! Workers dropped in flight, as a lost lease drops them: the key they held is reconciled again
//! once the workers run again, not left "processing" for good. A controller's writes pass its
//! fence, whatever runs its workers. And the host's bound on reconciles in flight, shared by
//! its controllers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use tokio::sync::Semaphore;

use super::deleting_tests::{
    config_maps, create_service, emulator_and_informers, on_emulator, until,
};
use super::invoke::{CallSlots, PluginError, Reconciler};
use super::{Controller, ControllerConfig};
use crate::fence::Fence;
use crate::plugin::test_info::{namespaced, owning_config_maps};
use crate::plugin::{
    FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse, Requeue,
};

/// Wants one ConfigMap per Service; its first call waits until released.
struct FirstCallWaits {
    info: PluginInfo,
    calls: AtomicUsize,
    released: (Mutex<bool>, Condvar),
}

impl FirstCallWaits {
    fn release(&self) {
        let (lock, wake) = &self.released;
        *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
    }
}

impl Reconciler for FirstCallWaits {
    fn info(&self) -> &PluginInfo {
        &self.info
    }
    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            let (lock, wake) = &self.released;
            let mut released = lock.lock().unwrap_or_else(PoisonError::into_inner);
            while !*released {
                released = wake.wait(released).unwrap_or_else(PoisonError::into_inner);
            }
        }
        let parent: serde_json::Value = serde_json::from_str(&req.parent).unwrap_or_default();
        let name = parent["metadata"]["name"].as_str().unwrap_or_default();
        Ok(ReconcileResponse {
            children: vec![json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("{name}-page")},
                "data": {"from": name},
            })],
            clusters: Vec::new(),
            status: None,
            requeue: Requeue::Done,
        })
    }
    fn finalize(&self, _: &FinalizeRequest) -> Result<FinalizeResponse, PluginError> {
        Ok(FinalizeResponse::complete())
    }
}

#[tokio::test]
async fn a_key_whose_workers_were_dropped_mid_reconcile_is_reconciled_when_they_run_again() {
    let plugin = Arc::new(FirstCallWaits {
        info: owning_config_maps("waits", namespaced("", "Service", "services")),
        calls: AtomicUsize::new(0),
        released: (Mutex::new(false), Condvar::new()),
    });
    let (_emulator, client, controller) = on_emulator(plugin.clone()).await;
    let workers = tokio::spawn(controller.clone().run_workers());
    create_service(&client, "a").await;
    until("the first reconcile in flight", || async {
        (plugin.calls.load(Ordering::SeqCst) == 1).then_some(())
    })
    .await;

    // The lease is lost and the workers are abandoned: the reconcile in flight is dropped.
    controller.shutdown();
    workers.abort();
    let _ = workers.await;
    plugin.release();

    // Won back: the dropped key runs again, with no new event for it.
    controller.resume();
    tokio::spawn(controller.clone().run_workers());
    let config_maps = config_maps(&client, "default");
    until("the Service's ConfigMap", || async {
        config_maps.get_opt("a-page").await.ok().flatten()
    })
    .await;
    assert!(plugin.calls.load(Ordering::SeqCst) >= 2, "reconciled again");
}

/// The fence is the last word on every write: workers running while it is shut (a guard task
/// that ran late, a reconcile that outlived the lease) send none; it opens, they converge.
#[tokio::test]
async fn a_controller_sends_no_write_while_its_fence_is_shut() {
    let (emulator, client, metrics, informers) = emulator_and_informers().await;
    let fence = Fence::closed();
    let plugin = Arc::new(FirstCallWaits {
        info: owning_config_maps("fenced", namespaced("", "Service", "services")),
        calls: AtomicUsize::new(0),
        released: (Mutex::new(true), Condvar::new()),
    });
    let controller = Arc::new(Controller::new(
        client.clone(),
        informers,
        plugin.clone(),
        CallSlots::new(4),
        metrics,
        ControllerConfig {
            fence: fence.clone(),
            ..ControllerConfig::default()
        },
    ));
    tokio::spawn(controller.clone().run_workers());
    create_service(&client, "a").await;
    until(
        "the reconcile tried again after its write was withheld",
        || async { (plugin.calls.load(Ordering::SeqCst) >= 2).then_some(()) },
    )
    .await;
    let writes: Vec<String> = emulator
        .requests()
        .iter()
        .filter(|r| r.is_write())
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        writes,
        ["POST /api/v1/namespaces/default/services"],
        "only the test's own create reached the API server"
    );

    fence.open_until(SystemTime::now() + Duration::from_secs(3600));
    let config_maps = config_maps(&client, "default");
    until("the Service's ConfigMap once the fence opens", || async {
        config_maps.get_opt("a-page").await.ok().flatten()
    })
    .await;
}

/// Takes a while over each parent and wants nothing; counts the calls in progress at once, across
/// every plugin given the same counter.
struct Slow {
    info: PluginInfo,
    at_once: Arc<AtOnce>,
}

#[derive(Default)]
struct AtOnce {
    now: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
}

impl Reconciler for Slow {
    fn info(&self) -> &PluginInfo {
        &self.info
    }
    fn reconcile(&self, _: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
        let now = self.at_once.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.at_once.most.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(40));
        self.at_once.now.fetch_sub(1, Ordering::SeqCst);
        self.at_once.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ReconcileResponse {
            children: vec![],
            clusters: Vec::new(),
            status: None,
            requeue: Requeue::Done,
        })
    }
    fn finalize(&self, _: &FinalizeRequest) -> Result<FinalizeResponse, PluginError> {
        Ok(FinalizeResponse::complete())
    }
}

/// Two plugins of four workers each, with call slots for all eight, share two reconcile slots
/// (as the manager gives all its controllers one semaphore): never more than two of their
/// reconciles run at once, and both plugins get through all their parents.
#[tokio::test]
async fn controllers_sharing_reconcile_slots_never_run_more_reconciles_at_once() {
    let (_emulator, client, metrics, informers) = emulator_and_informers().await;
    let calls = CallSlots::new(16);
    let config = ControllerConfig {
        workers: 4,
        reconcile_slots: Arc::new(Semaphore::new(2)),
        namespace: Some("default".into()),
        ..ControllerConfig::default()
    };
    let at_once = Arc::new(AtOnce::default());
    let kinds = [
        namespaced("", "Service", "services"),
        namespaced("", "ServiceAccount", "serviceaccounts"),
    ];
    for kind in &kinds {
        let plugin = Arc::new(Slow {
            info: owning_config_maps(&kind.plural, kind.clone()),
            at_once: at_once.clone(),
        });
        let controller = Arc::new(Controller::new(
            client.clone(),
            informers.clone(),
            plugin,
            calls.clone(),
            metrics.clone(),
            config.clone(),
        ));
        tokio::spawn(controller.run_workers());
    }
    for kind in &kinds {
        let api =
            Api::<DynamicObject>::namespaced_with(client.clone(), "default", &kind.api_resource());
        for n in 0..8 {
            let mut object = json!({
                "apiVersion": "v1", "kind": kind.kind,
                "metadata": {"name": format!("p{n}"), "namespace": "default"},
            });
            if kind.kind == "Service" {
                object["spec"] = json!({"ports": [{"port": 80}]});
            }
            let object: DynamicObject =
                serde_json::from_value(object).unwrap_or_else(|e| panic!("{e}"));
            api.create(&PostParams::default(), &object)
                .await
                .unwrap_or_else(|e| panic!("creating {} p{n}: {e}", kind.kind));
        }
    }
    until("every parent of both plugins reconciled", || async {
        (at_once.calls.load(Ordering::SeqCst) >= 16).then_some(())
    })
    .await;
    assert_eq!(
        at_once.most.load(Ordering::SeqCst),
        2,
        "reconciles at once across the two plugins (two slots, eight workers)"
    );
}
