//! State every request handler and background task shares: the store under its lock, the
//! configuration, the request log, and the signal that ends every watch.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::config::{EmulatorConfig, RequestRecord};
use crate::ops;
use crate::opts::{Validation, WriteOpts};
use crate::store::Store;

/// State every request handler and background task shares.
pub struct Shared {
    store: Mutex<Store>,
    /// The configuration the emulator was started with.
    pub config: EmulatorConfig,
    requests: Mutex<Vec<RequestRecord>>,
    address: std::sync::OnceLock<String>,
    drop_tx: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    /// Fresh state with the default namespaces created.
    pub fn new(config: EmulatorConfig) -> Arc<Self> {
        let mut store = Store::new(config.watch_history);
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let rt = store.registry.find("", "v1", "namespaces").cloned();
            if let Some(rt) = rt {
                let opts = WriteOpts {
                    manager: "weir-emulator".into(),
                    validation: Validation::Ignore,
                    dry_run: false,
                    force: false,
                };
                let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                if let Err(e) = ops::create(&mut store, &rt, "", body, &opts) {
                    tracing::warn!(namespace = ns, error = %e, "could not create a default namespace");
                }
            }
        }
        let (drop_tx, _) = tokio::sync::watch::channel(0);
        Arc::new(Shared {
            store: Mutex::new(store),
            config,
            requests: Mutex::new(Vec::new()),
            address: std::sync::OnceLock::new(),
            drop_tx,
        })
    }

    /// The store; a poisoned lock is recovered because every mutation leaves it consistent.
    pub fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record the bound `host:port` (reported by `/api`).
    pub fn set_address(&self, addr: String) {
        let _ = self.address.set(addr);
    }

    /// The bound `host:port`.
    pub fn address(&self) -> String {
        self.address.get().cloned().unwrap_or_default()
    }

    /// A receiver that changes when every open watch must end.
    pub fn drop_rx(&self) -> tokio::sync::watch::Receiver<u64> {
        self.drop_tx.subscribe()
    }

    /// End every open watch stream.
    pub fn drop_watches(&self) {
        self.drop_tx.send_modify(|n| *n += 1);
    }

    /// How often watches with `allowWatchBookmarks` get a bookmark.
    pub fn bookmark_interval(&self) -> Duration {
        self.config.bookmark_interval.max(Duration::from_millis(10))
    }

    /// The request log, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Empty the request log.
    pub fn clear_requests(&self) {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Append one served request to the log.
    pub fn record(&self, r: RequestRecord) {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
    }
}
