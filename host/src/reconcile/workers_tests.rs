//! Workers dropped in flight, as a lost lease drops them: the key they held is reconciled again
//! once the workers run again, not left "processing" for good.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use serde_json::json;

use super::finalize_tests::{config_maps, create_service, on_emulator, until};
use super::invoke::{PluginError, Reconciler};
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
