//! ④ The plugin call: off the async executor, under a semaphore, inside the reconcile's span.
//!
//! Plugin calls block for up to their timeout (the sandbox's deadline covers a guest waiting in
//! the host too); running them on the executor's threads would stall every watch and worker, so
//! they go to `spawn_blocking` with a bounded number in flight. The host's call slots are shared
//! by its plugins, and one plugin may hold at most a quota of them ([`CallSlots`]), so a
//! plugin whose calls all run to their deadline slows itself down, not the others. A host with
//! tenants also gives each call one of the machine's cores, in turn per tenant
//! ([`crate::tenant::Cores`]).

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::answer::redacted;
pub use crate::answer::{FailureCause, PluginError};
use crate::clusters::MemberObject;
use crate::metrics::Metrics;
use crate::plugin::{
    ErrorKind, FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse,
    Selection,
};
use crate::runtime::cache::CachedObject;
use crate::tenant::Share;

use super::related::Found;

/// The cached child as the plugin may see it ([`crate::answer::redacted`]): the same `Arc` for
/// anything but a Secret (no copy), a redacted copy for a Secret (decoded, redacted and cached
/// again), or nothing for a Secret that does not decode. An object without `apiVersion`/`kind`
/// is treated as a Secret.
pub fn cached_for_plugin(child: &Arc<CachedObject>) -> Option<Arc<CachedObject>> {
    let types = child.types();
    let secret = types.kind.is_empty() || (types.api_version == "v1" && types.kind == "Secret");
    if !secret {
        return Some(Arc::clone(child));
    }
    let decoded = child.decode().ok()?;
    CachedObject::from_object(&redacted(&decoded))
        .ok()
        .map(Arc::new)
}

fn from_call(e: crate::plugin::CallError) -> PluginError {
    use crate::plugin::CallError;
    let cause = match &e {
        CallError::InvalidResponse { .. } | CallError::ResponseTooLarge { .. } => {
            return PluginError::refused(e.to_string());
        }
        CallError::Trap { .. } => FailureCause::Trap,
        CallError::Timeout { .. } => FailureCause::Timeout,
        CallError::OutOfMemory { .. } => FailureCause::Memory,
        _ => FailureCause::Error,
    };
    PluginError {
        cause,
        ..PluginError::new(e.kind(), e.to_string())
    }
}

/// What the host needs from a reconcile step: the sandboxed plugin, or a native stand-in in tests.
pub trait Reconciler: Send + Sync + 'static {
    /// What the plugin declared at load.
    fn info(&self) -> &PluginInfo;
    /// The related objects to read for a parent (its JSON). Blocking. A plugin without related
    /// kinds selects nothing (the default).
    fn select(&self, parent: &str) -> Result<Vec<Selection>, PluginError> {
        let _ = parent;
        Ok(Vec::new())
    }
    /// One reconcile. Blocking.
    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError>;
    /// One cleanup step. Blocking.
    fn finalize(&self, req: &FinalizeRequest) -> Result<FinalizeResponse, PluginError>;
}

impl Reconciler for crate::plugin::Plugin {
    fn info(&self) -> &PluginInfo {
        crate::plugin::Plugin::info(self)
    }

    fn select(&self, parent: &str) -> Result<Vec<Selection>, PluginError> {
        crate::plugin::Plugin::select(self, parent).map_err(from_call)
    }

    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
        crate::plugin::Plugin::reconcile(self, req).map_err(from_call)
    }

    fn finalize(&self, req: &FinalizeRequest) -> Result<FinalizeResponse, PluginError> {
        crate::plugin::Plugin::finalize(self, req).map_err(from_call)
    }
}

/// The most of a host's `total` call slots one plugin may hold: half, and at least one. Half
/// leaves the other plugins as many slots as the busiest one, and lets a single plugin still
/// use the host when it is alone.
pub fn plugin_quota(total: usize) -> usize {
    (total / 2).max(1)
}

/// The host's plugin-call slots, shared by all its plugins, and how many one plugin may hold.
#[derive(Clone, Debug)]
pub struct CallSlots {
    /// The host's slots.
    pub permits: Arc<Semaphore>,
    /// The most of them one plugin may hold at once.
    pub quota: usize,
    /// With tenants, the flow whose turn gives each call a core (`None`: no tenants, calls
    /// take no core).
    pub cores: Option<Share>,
}

impl CallSlots {
    /// `total` slots (at least one), each plugin holding at most [`plugin_quota`] of them.
    pub fn new(total: usize) -> Self {
        let total = total.max(1);
        Self {
            permits: Arc::new(Semaphore::new(total)),
            quota: plugin_quota(total),
            cores: None,
        }
    }

    /// These slots, each call also taking a core in the turn of flow `cores`.
    pub fn with_cores(self, cores: Option<Share>) -> Self {
        Self { cores, ..self }
    }
}

/// Calls one plugin with bounded concurrency.
pub struct Invoker {
    plugin: Arc<dyn Reconciler>,
    /// The host's call slots, shared by all its plugins.
    permits: Arc<Semaphore>,
    /// This plugin's quota of them, taken before a shared slot.
    own: Arc<Semaphore>,
    /// With tenants, its flow of the machine's cores, taken last.
    cores: Option<Share>,
    metrics: Arc<Metrics>,
}

/// The JSON of cached objects, as they are cached: the contract carries JSON text.
fn texts(objects: &[Arc<CachedObject>]) -> Vec<String> {
    objects.iter().map(|o| o.json()).collect()
}

impl Invoker {
    /// An invoker sharing `permits` with the host's other plugins, holding at most
    /// [`plugin_quota`] of them. The quota is computed from the slots free now, which is
    /// all of them when the host creates its controllers before any call; a caller that
    /// knows the total uses [`Invoker::with_slots`].
    pub fn new(
        plugin: Arc<dyn Reconciler>,
        permits: Arc<Semaphore>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let quota = plugin_quota(permits.available_permits());
        let slots = CallSlots {
            permits,
            quota,
            cores: None,
        };
        Self::with_slots(plugin, &slots, metrics)
    }

    /// An invoker sharing `slots` with the host's other plugins, holding at most their quota
    /// at once (at least one).
    pub fn with_slots(
        plugin: Arc<dyn Reconciler>,
        slots: &CallSlots,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            plugin,
            permits: slots.permits.clone(),
            own: Arc::new(Semaphore::new(slots.quota.max(1))),
            cores: slots.cores.clone(),
            metrics,
        }
    }

    /// What the plugin declared.
    pub fn info(&self) -> &PluginInfo {
        self.plugin.info()
    }

    /// Runs a blocking plugin call on the blocking pool, in the caller's span.
    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Reconciler) -> Result<R, PluginError> + Send + 'static,
    ) -> Result<R, PluginError> {
        let name = self.plugin.info().name.clone();
        let closed = |_| {
            PluginError::new(
                ErrorKind::Transient,
                format!("plugin {name}: host is shutting down"),
            )
        };
        // This plugin's slot first, so a plugin at its quota waits without holding a shared one.
        let _own = self.own.clone().acquire_owned().await.map_err(closed)?;
        let _permit = self.permits.clone().acquire_owned().await.map_err(closed)?;
        // A core in this tenant's turn, last, so a call holds one only once it may run.
        let _core = match &self.cores {
            Some(cores) => Some(cores.acquire().await.map_err(|e| {
                PluginError::new(ErrorKind::Transient, format!("plugin {name}: {e}"))
            })?),
            None => None,
        };
        let plugin = self.plugin.clone();
        let span = tracing::Span::current();
        let started = Instant::now();
        let joined = tokio::task::spawn_blocking(move || span.in_scope(|| f(plugin.as_ref())))
            .instrument(tracing::Span::current())
            .await;
        self.metrics.plugin_called(&name, started.elapsed());
        joined.unwrap_or_else(|e| {
            Err(PluginError::new(
                ErrorKind::Transient,
                format!("plugin {name}: call aborted: {e}"),
            ))
        })
    }

    /// What the plugin wants to read for `parent` (its `select`).
    pub async fn select(&self, parent: &CachedObject) -> Result<Vec<Selection>, PluginError> {
        let parent = parent.json();
        self.call(move |p| p.select(&parent)).await
    }

    /// The plugin's answer for `parent` with its observed `children` and selected `related` objects.
    pub async fn reconcile(
        &self,
        parent: &CachedObject,
        children: &[Arc<CachedObject>],
        related: &Found,
    ) -> Result<ReconcileResponse, PluginError> {
        self.reconcile_placed(parent, (children, &[]), related)
            .await
    }

    /// [`Invoker::reconcile`] with the parent's children in the engaged member clusters too
    /// (`elsewhere`, each with its cluster's name), after those in its own cluster, and the
    /// related objects read in members after those read at home. A plugin older than contract
    /// 0.4.0 is given the ones in its parent's cluster only.
    pub async fn reconcile_placed(
        &self,
        parent: &CachedObject,
        (children, elsewhere): (&[Arc<CachedObject>], &[MemberObject]),
        related: &Found,
    ) -> Result<ReconcileResponse, PluginError> {
        let (children, related, clusters) = placed(children, elsewhere, related);
        let req = ReconcileRequest {
            parent: parent.json(),
            children,
            related,
            clusters,
        };
        self.call(move |p| p.reconcile(&req)).await
    }

    /// One cleanup step for `parent`, which is being deleted, given its children as
    /// [`Invoker::reconcile_placed`] gives them.
    pub async fn finalize(
        &self,
        parent: &CachedObject,
        (children, elsewhere): (&[Arc<CachedObject>], &[MemberObject]),
        related: &Found,
        finalizer: &str,
    ) -> Result<FinalizeResponse, PluginError> {
        let (children, related, clusters) = placed(children, elsewhere, related);
        let req = FinalizeRequest {
            parent: parent.json(),
            children,
            related,
            finalizer: finalizer.to_owned(),
            clusters,
        };
        self.call(move |p| p.finalize(&req)).await
    }
}

/// The texts of a parent's `children` in its own cluster, then of those `elsewhere` (as the
/// plugin sees them: Secrets redacted); the texts of the `related` objects read at home, then
/// of those read in members (as resolved: Secrets as the policy hands them over); and the
/// cluster of each.
fn placed(
    children: &[Arc<CachedObject>],
    elsewhere: &[MemberObject],
    related: &Found,
) -> (Vec<String>, Vec<String>, crate::plugin::Clusters) {
    let mut texts_of_children = texts(children);
    // Objects in their own cluster name none: the parent's, the host's own.
    let mut clusters = vec![String::new(); children.len()];
    for (cluster, child) in elsewhere {
        if let Some(child) = cached_for_plugin(child) {
            texts_of_children.push(child.json());
            clusters.push(cluster.clone());
        }
    }
    let mut texts_of_related = texts(&related.home);
    let mut related_clusters = vec![String::new(); related.home.len()];
    for (cluster, object) in &related.elsewhere {
        texts_of_related.push(object.json());
        related_clusters.push(cluster.clone());
    }
    let clusters = crate::plugin::Clusters {
        children: clusters,
        related: related_clusters,
        ..Default::default()
    };
    (texts_of_children, texts_of_related, clusters)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex, PoisonError};
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::plugin::{Requeue, ResourceKind};

    /// A native plugin whose calls block until the test opens the gate, counting how many run.
    struct Stuck {
        info: PluginInfo,
        gate: Arc<(Mutex<bool>, Condvar)>,
        running: AtomicUsize,
        most: AtomicUsize,
    }

    fn info(name: &str) -> PluginInfo {
        let kind = |kind: &str| ResourceKind {
            group: "test.weir.dev".into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
            namespaced: true,
        };
        PluginInfo {
            name: name.into(),
            version: "0.1.0".into(),
            parent: kind("Parent"),
            children: vec![kind("Child")],
            related: vec![],
            finalizer: None,
            crd: None,
        }
    }

    impl Reconciler for Stuck {
        fn info(&self) -> &PluginInfo {
            &self.info
        }
        fn reconcile(&self, _: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            let (open, cvar) = &*self.gate;
            let mut open = open
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            while !*open {
                open = cvar
                    .wait(open)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            self.running.fetch_sub(1, Ordering::SeqCst);
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

    fn parent() -> CachedObject {
        serde_json::from_value::<kube::api::DynamicObject>(json!({
            "apiVersion": "test.weir.dev/v1", "kind": "Parent",
            "metadata": {"name": "p", "namespace": "default"},
        }))
        .and_then(|p| CachedObject::from_object(&p))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_plugin_holds_half_of_the_hosts_call_slots_and_at_least_one() {
        assert_eq!(plugin_quota(8), 4);
        assert_eq!(plugin_quota(3), 1);
        assert_eq!(plugin_quota(1), 1);
        assert_eq!(plugin_quota(0), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_plugins_stuck_calls_do_not_block_another_plugins_call() {
        let permits = Arc::new(Semaphore::new(4));
        let metrics = Arc::new(Metrics::new());
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let stuck = Arc::new(Stuck {
            info: info("stuck"),
            gate: gate.clone(),
            running: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        });
        let stuck_invoker = Arc::new(Invoker::new(
            stuck.clone(),
            permits.clone(),
            metrics.clone(),
        ));
        let calls: Vec<_> = (0..4)
            .map(|_| {
                let invoker = stuck_invoker.clone();
                tokio::spawn(
                    async move { invoker.reconcile(&parent(), &[], &Found::default()).await },
                )
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            stuck.running.load(Ordering::SeqCst),
            2,
            "the stuck plugin holds its quota"
        );

        let calm = Arc::new(Stuck {
            info: info("calm"),
            gate: Arc::new((Mutex::new(true), Condvar::new())),
            running: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        });
        let calm_invoker = Invoker::new(calm, permits.clone(), metrics);
        let answer = tokio::time::timeout(
            Duration::from_secs(5),
            calm_invoker.reconcile(&parent(), &[], &Found::default()),
        )
        .await;
        assert!(
            matches!(answer, Ok(Ok(_))),
            "the other plugin's call waited: {answer:?}"
        );

        *gate
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        gate.1.notify_all();
        for call in calls {
            assert!(matches!(call.await, Ok(Ok(_))));
        }
        assert_eq!(
            stuck.most.load(Ordering::SeqCst),
            2,
            "never more than its quota at once"
        );
        assert_eq!(permits.available_permits(), 4);
    }

    /// Keeps the last request it was given.
    struct Recording {
        info: PluginInfo,
        last: Mutex<Option<ReconcileRequest>>,
    }

    impl Reconciler for Recording {
        fn info(&self) -> &PluginInfo {
            &self.info
        }
        fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(req.clone());
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

    #[tokio::test]
    async fn objects_in_member_clusters_reach_the_plugin_after_the_local_ones_with_their_cluster() {
        let recording = Arc::new(Recording {
            info: info("spread"),
            last: Mutex::new(None),
        });
        let invoker = Invoker::new(
            recording.clone(),
            Arc::new(Semaphore::new(2)),
            Arc::new(Metrics::new()),
        );
        let child = |name: &str| {
            let obj = serde_json::from_value::<kube::api::DynamicObject>(json!({
                "apiVersion": "test.weir.dev/v1", "kind": "Child",
                "metadata": {"name": name, "namespace": "default"},
            }));
            let cached = obj.and_then(|o| CachedObject::from_object(&o));
            Arc::new(cached.unwrap_or_else(|e| panic!("{e}")))
        };
        let local = [child("here")];
        let elsewhere = [("member-a".to_owned(), child("there"))];
        let related = Found {
            home: vec![child("theme-here")],
            elsewhere: vec![("member-b".to_owned(), child("theme-there"))],
        };
        let answer = invoker
            .reconcile_placed(&parent(), (&local, &elsewhere), &related)
            .await;
        assert!(answer.is_ok(), "{answer:?}");
        let req = recording
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let req = req.unwrap_or_else(|| panic!("the plugin was not called"));
        assert_eq!(req.children.len(), 2);
        assert!(req.children[0].contains("\"here\""), "{}", req.children[0]);
        assert!(req.children[1].contains("\"there\""), "{}", req.children[1]);
        assert_eq!(req.clusters.child(0), crate::plugin::LOCAL_CLUSTER);
        assert_eq!(req.clusters.child(1), "member-a");
        assert_eq!(req.related.len(), 2);
        assert!(
            req.related[0].contains("\"theme-here\""),
            "{}",
            req.related[0]
        );
        assert!(
            req.related[1].contains("\"theme-there\""),
            "{}",
            req.related[1]
        );
        assert_eq!(req.clusters.related(0), crate::plugin::LOCAL_CLUSTER);
        assert_eq!(req.clusters.related(1), "member-b");
    }
}
