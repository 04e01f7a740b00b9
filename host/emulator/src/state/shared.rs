//! State every request handler and background task shares: the store under its lock, the
//! configuration, the request log, and the signal that ends every watch.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::state::auth::Auth;
use crate::state::config::{EmulatorConfig, RequestRecord};
use crate::state::persist::{Snapshot, StateError};
use crate::state::request_log::{RequestCursor, RequestLog};
use crate::store::Store;
use crate::write::ops;
use crate::write::opts::{Validation, WriteOpts};

/// State every request handler and background task shares.
pub struct Shared {
    store: Mutex<Store>,
    /// The configuration the emulator was started with.
    pub config: EmulatorConfig,
    /// Certificates and tokens when [`EmulatorConfig::secure`] is on (then RBAC is enforced).
    pub auth: Option<Auth>,
    requests: Mutex<RequestLog>,
    address: std::sync::OnceLock<String>,
    drop_tx: tokio::sync::watch::Sender<u64>,
}

/// What a new cluster holds before anyone writes: the default namespaces and the two system
/// PriorityClasses (as kube-apiserver's scheduling bootstrap creates them).
fn bootstrap_objects() -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut objects: Vec<serde_json::Value> =
        ["default", "kube-system", "kube-public", "kube-node-lease"]
            .iter()
            .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .collect();
    for (name, value, description) in [
        (
            "system-node-critical",
            2_000_001_000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        (
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
    ] {
        objects.push(
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "description": description,
            "preemptionPolicy": "PreemptLowerPriority"}),
        );
    }
    objects
}

/// A store holding [`bootstrap_objects`], as a new cluster has them.
fn fresh_store(history_cap: usize) -> Store {
    let mut store = Store::new(history_cap);
    let opts = WriteOpts {
        manager: "weir-emulator".into(),
        validation: Validation::Ignore,
        dry_run: false,
        force: false,
    };
    for body in bootstrap_objects() {
        let name = crate::wire::object::name(&body).to_string();
        let (group, version) = match body["apiVersion"].as_str().unwrap_or("").rsplit_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (
                String::new(),
                body["apiVersion"].as_str().unwrap_or("").to_string(),
            ),
        };
        let kind = body["kind"].as_str().unwrap_or("").to_string();
        let rt = store
            .registry
            .all()
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
            .cloned();
        if let Some(rt) = rt
            && let Err(e) = ops::create(&mut store, &rt, "", body, &opts)
        {
            tracing::warn!(%kind, %name, error = %e, "could not create a bootstrap object");
        }
    }
    store
}

impl Shared {
    /// The state of the configured state file if it exists, else a fresh store with the default
    /// namespaces; `auth` is `Some` when the emulator is secure.
    pub fn new(config: EmulatorConfig, auth: Option<Auth>) -> Result<Arc<Self>, StateError> {
        let store = Self::initial_store(&config, None)?;
        let (drop_tx, _) = tokio::sync::watch::channel(0);
        let requests = Mutex::new(RequestLog::new(config.request_log));
        Ok(Arc::new(Shared {
            store: Mutex::new(store),
            config,
            auth,
            requests,
            address: std::sync::OnceLock::new(),
            drop_tx,
        }))
    }

    /// What a starting emulator serves: the state file's contents when it exists, else `kept`
    /// (a restart without a state file), else a fresh store.
    fn initial_store(config: &EmulatorConfig, kept: Option<Snapshot>) -> Result<Store, StateError> {
        let loaded = match &config.state_file {
            Some(path) => Snapshot::load(path)?,
            None => None,
        };
        Ok(match loaded.or(kept) {
            Some(snapshot) => snapshot.into_store(config.watch_history),
            None => fresh_store(config.watch_history),
        })
    }

    /// The store's contents now, written to the state file if one is configured.
    pub fn save(&self) -> Result<Snapshot, StateError> {
        let snapshot = Snapshot::of(&self.lock());
        if let Some(path) = &self.config.state_file {
            snapshot.save(path)?;
        }
        Ok(snapshot)
    }

    /// Replace the store as a restarted emulator finds it (see [`Shared::new`]), `kept` standing
    /// in for the state file when none is configured. Watches on the old store must have ended.
    pub fn reload(&self, kept: Snapshot) -> Result<(), StateError> {
        let store = Self::initial_store(&self.config, Some(kept))?;
        *self.lock() = store;
        Ok(())
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

    fn log(&self) -> MutexGuard<'_, RequestLog> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The request log, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.log().all()
    }

    /// The requests served since `cursor`, moving it past them.
    pub fn requests_since(&self, cursor: &mut RequestCursor) -> Vec<RequestRecord> {
        self.log().since(cursor)
    }

    /// A cursor past every request served so far.
    pub fn request_cursor(&self) -> RequestCursor {
        self.log().end()
    }

    /// Empty the request log.
    pub fn clear_requests(&self) {
        self.log().clear();
    }

    /// Append one served request to the log.
    pub fn record(&self, r: RequestRecord) {
        self.log().push(r);
    }
}
