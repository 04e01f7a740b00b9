//! The cluster source: `Plugin` objects followed, their components fetched, stored by digest,
//! loaded, and turned into the same [`PluginEvent`]s as the directory's files.
//!
//! One task watches every Plugin (`weir.dev/v1alpha1`, cluster-scoped) and handles one at a
//! time, off the reconcile path. For each Plugin whose spec it has not decided on yet:
//! 1. **fetch** (`crate::cluster::fetch`): the tag is resolved on every replica and checked
//!    against the pin (one manifest HEAD request), so a host with the old content in its store
//!    answers as a fresh one does; only the download is spared when the digest is on local
//!    disk. Without a pin, the tag is resolved once per spec: the digest the status records for
//!    this generation is what every replica fetches (by digest, no HEAD). A ConfigMap is read
//!    and hashed on every fetch.
//! 2. **verify** (with a verification policy, `signed`): the verdict kept beside the store for
//!    this digest and policy, else the artifact's signatures (its `sha256-<hex>.sig` tag and the
//!    Sigstore bundles referring to it); under
//!    `enforce` a component that does not verify is refused before it is loaded, under `audit`
//!    it loads and its status says why it would not have.
//! 3. **load** with the host's loader (compile, or map the precompiled artifact; then admission),
//!    on a blocking thread.
//! 4. **serve**: [`PluginEvent::Added`], or [`PluginEvent::Replaced`] for a new digest (a hot
//!    swap). A second Plugin for a kind another Plugin serves is refused until that kind is free.
//!
//! A refusal (unreachable registry, wrong digest, not a component, wrong contract, `describe`
//! traps, a kind already served) leaves the previous version serving and says why on the
//! Plugin's status; transient ones (registry, pull Secret, ConfigMap, disk) are retried with
//! backoff. Deleting a Plugin unloads it ([`PluginEvent::Removed`]: its children stay).
//!
//! A registry outage is not a refusal of a Plugin pinned by tag and digest whose digest is in
//! the local store: that version serves (on a restart as on a swap), the status's `TagChecked`
//! condition says the tag could not be checked and since when, and the tag is asked about again
//! on the retry backoff; when the registry answers that the tag moved, that version is refused
//! and withdrawn as if the registry had answered at once (see `unchecked`).
//!
//! The Plugins wait their turn on the host's own work queue (`crate::runtime::queue`), one
//! key per Plugin: a change of spec is an outside change, the echo of a status write is not,
//! and a transient refusal is a failed attempt retried on the queue's per-key backoff.
//! Which Plugin serves a kind is decided by the same arbiter as the directory's files.
//!
//! Every replica loads every Plugin, so a standby that takes over has its components compiled
//! already; only the leader writes Plugin status (`crate::cluster::status`).
//!
//! The same loader follows one namespace's `TenantPlugin`s ([`ClusterLoader::start_tenant`],
//! `objects`): the same steps and status, events named `TenantPlugin/NAMESPACE/NAME`, and
//! nothing read from another namespace (a pull Secret or ConfigMap there is refused,
//! `OutsideNamespace`); what it admits is the tenant's admission (`crate::policy::admit_tenant`).
//! Given the tenant's cache cap, each TenantPlugin's status says whether the tenant is at it
//! (`CacheLimited`): every key is looked at again when the cap's stores change
//! ([`crate::runtime::Cap::fill_changes`]), and a status is written only if that changed it.
//!
//! A Plugin's `spec.candidate` is fetched, verified and loaded the same way and sent on a second
//! channel, named `Plugin/NAME/candidate`: the manager rolls it out beside what `Plugin/NAME`
//! serves (`crate::rollout`). Removing it sends [`PluginEvent::Removed`] (withdrawn); one that
//! cannot be fetched, verified or loaded is [`PluginEvent::Refused`] before any load (listed in
//! `/plugins`, its reason in the status's `CandidateLoaded` condition and the log), so it is never
//! shadowed, canaried or promoted; it is tried again when its spec changes, or on the backoff
//! when the refusal may pass (a registry unreachable, a signature not pushed yet).

mod attempt;
mod candidate;
mod objects;
mod signed;
mod unchecked;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::watch;
use tracing::warn;

use self::objects::Objects;
use super::arbiter::{Arbiter, KindKey};
use super::dir::{Loaded, PluginEvent};
use super::{Catalog, Error, Events, HotloadMetrics, Loader, RefusedAfterLoad, Result};
use crate::chain::Chain;
use crate::cluster::candidate_status::CandidateAttempt;
use crate::cluster::fetch::TagCheck;
use crate::cluster::status::Attempt;
use crate::cluster::verdict::Signature;
use crate::cluster::{Blobs, CandidateSource, PluginResource, PluginSpec};
use crate::fence::Fence;
use crate::runtime::{Cap, Cause, Finish, ObjectKey, Queue, QueueConfig, Stores};
use crate::trust::{Policy, VerdictCache};

/// How the cluster source stores and retries.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Where pulled components are kept by digest (`DIR/components`, `DIR/manifests`).
    pub store: PathBuf,
    /// Delay before the first retry of a transient failure; it doubles on each failure (±10 %).
    pub retry: Duration,
    /// Longest delay between retries.
    pub max_retry: Duration,
    /// The verification policy every component and candidate is held to before it loads; the
    /// manager sets it from [`crate::manager::ManagerConfig::verification`] (`weir run
    /// --verification-policy`); `None` checks no signature.
    pub verification: Option<Arc<Policy>>,
}

impl ClusterConfig {
    /// Components stored under `store`; retries after 1 s, 2 s, … up to 2 min.
    pub fn new(store: impl Into<PathBuf>) -> Self {
        Self {
            store: store.into(),
            retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(120),
            verification: None,
        }
    }
}

/// A started cluster source, the events of the versions it serves, and its candidates' (with
/// where their refusals after the load go back to).
pub type Started<P> = (
    ClusterLoader,
    Events<P>,
    (Events<P>, UnboundedSender<RefusedAfterLoad>),
);

/// A running cluster source; dropping it stops the watch.
pub struct ClusterLoader {
    task: tokio::task::JoinHandle<()>,
    catalog: Catalog,
}

impl Drop for ClusterLoader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ClusterLoader {
    /// Starts following Plugin objects. `leading` is this replica's leadership and `client` is
    /// built by it ([`Fence::client`]): only a leader writes Plugin status, but every replica
    /// loads. Returns the served versions' events and the candidates'.
    pub fn start<L: Loader + Sync>(
        client: Client,
        config: ClusterConfig,
        leading: Fence,
        loader: L,
        metrics: HotloadMetrics,
    ) -> Result<Started<L::Plugin>> {
        let objects = Objects::Cluster(Api::all(client.clone()));
        Self::start_with(client, objects, config, leading, loader, metrics)
    }

    /// Starts following the `TenantPlugin` objects of `namespace` only, as [`ClusterLoader::start`]
    /// follows Plugins; a TenantPlugin naming a pull Secret or a ConfigMap of another namespace
    /// is refused (`OutsideNamespace`). What `loader` admits is its call (a tenant's admission).
    /// Events name each one `TenantPlugin/NAMESPACE/NAME`. Given `cap`, the cap on the tenant's
    /// cache, each TenantPlugin's status says whether the tenant is at it (`CacheLimited`).
    pub fn start_tenant<L: Loader + Sync>(
        client: Client,
        namespace: &str,
        cap: Option<Arc<Cap>>,
        config: ClusterConfig,
        leading: Fence,
        loader: L,
        metrics: HotloadMetrics,
    ) -> Result<Started<L::Plugin>> {
        let objects = Objects::Tenant {
            namespace: namespace.to_owned(),
            api: Api::namespaced(client.clone(), namespace),
            cap,
        };
        Self::start_with(client, objects, config, leading, loader, metrics)
    }

    fn start_with<L: Loader + Sync>(
        client: Client,
        objects: Objects,
        config: ClusterConfig,
        leading: Fence,
        loader: L,
        metrics: HotloadMetrics,
    ) -> Result<Started<L::Plugin>> {
        let blobs = Blobs::open(&config.store).map_err(|source| Error::Store {
            dir: config.store.clone(),
            source,
        })?;
        let (events, rx) = unbounded_channel();
        let (candidates, candidates_rx) = unbounded_channel();
        let (refused_after_load, refused_rx) = unbounded_channel();
        let catalog = Catalog::default();
        let queue = Queue::new(QueueConfig {
            base_delay: config.retry,
            max_delay: config.max_retry,
            ..QueueConfig::default()
        });
        let run = Run {
            verdicts: VerdictCache::new(&config.store),
            verification: config.verification.clone(),
            queue: Arc::new(queue),
            objects,
            client,
            blobs,
            loader: Arc::new(loader),
            events,
            candidates,
            metrics,
            catalog: catalog.clone(),
            leading,
            entries: BTreeMap::new(),
            arbiter: Arbiter::default(),
            listed: false,
        };
        let task = tokio::spawn(run.run(refused_rx));
        let candidates = (candidates_rx, refused_after_load);
        Ok((Self { task, catalog }, rx, candidates))
    }

    /// The plugins served right now.
    pub fn catalog(&self) -> Catalog {
        self.catalog.clone()
    }

    /// The serving file of a candidate's: `Plugin/NAME` for `Plugin/NAME/candidate`.
    pub fn serving_of(candidate: &Path) -> PathBuf {
        candidate
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }
}

/// One Plugin object and what became of it.
struct Entry<P> {
    /// The object as last seen (its status as last written by this replica, or seen).
    object: PluginResource,
    /// The spec last attempted: nothing to do while it holds (and no retry is due).
    attempted: Option<PluginSpec>,
    /// The version serving, and the digest it came from.
    serving: Option<(P, String)>,
    /// What the fetch of the version serving learned of its tag.
    tag: TagCheck,
    /// What its signatures came to (`None` without a verification policy).
    signature: Option<Signature>,
    /// The version that served before one served with its tag unchecked: it serves again if
    /// the registry answers that the tag does not name the unchecked one (`unchecked`).
    fallback: Option<unchecked::Fallback<P>>,
    /// What the last attempt came to.
    attempt: Attempt,
    /// The last attempt failed for a reason that may pass: it is tried again on the queue's
    /// backoff, with the same spec.
    retrying: bool,
    /// The `spec.candidate` last attempted.
    candidate_attempted: Option<CandidateSource>,
    /// The candidate proposed, and the digest it came from.
    candidate: Option<(P, String)>,
    /// What became of the `spec.candidate` last attempted, as the status says it (`None`
    /// while the spec names none).
    candidate_status: Option<CandidateAttempt>,
}

struct Run<L: Loader> {
    /// The verification policy, if any.
    verification: Option<Arc<Policy>>,
    /// Verdicts kept beside the component store.
    verdicts: VerdictCache,
    /// One key per Plugin (cluster-scoped: no namespace), handed out one at a time.
    queue: Arc<Queue>,
    client: Client,
    /// The Plugins (or one namespace's TenantPlugins) followed.
    objects: Objects,
    blobs: Blobs,
    loader: Arc<L>,
    events: UnboundedSender<PluginEvent<L::Plugin>>,
    /// Candidates proposed, withdrawn or refused (`Plugin/NAME/candidate`).
    candidates: UnboundedSender<PluginEvent<L::Plugin>>,
    metrics: HotloadMetrics,
    catalog: Catalog,
    leading: Fence,
    entries: BTreeMap<String, Entry<L::Plugin>>,
    /// Which Plugin serves each kind.
    arbiter: Arbiter<String>,
    /// Whether the first list has been seen.
    listed: bool,
}

impl<L: Loader + Sync> Run<L> {
    async fn run(mut self, mut refused_after_load: UnboundedReceiver<RefusedAfterLoad>) {
        let mut stream = self.objects.watch();
        let (leading, queue) = (self.leading.clone(), self.queue.clone());
        let mut relisted: Option<BTreeSet<String>> = None;
        let mut fills = self.objects.fill_changes();
        loop {
            tokio::select! {
                item = stream.next() => match item {
                    None => return,
                    Some(Err(e)) => warn!(error = %Chain(&e), "watching Plugins failed; retrying"),
                    Some(Ok(event)) => self.observe(event, &mut relisted),
                },
                key = queue.next() => {
                    let Some(key) = key else { return };
                    let finish = self.handle(&key.name).await;
                    queue.finish(&key, finish);
                }
                Some(refused) = refused_after_load.recv() => self.candidate_refused_after_load(refused),
                // A new leader writes every status that is not up to date; so does each one
                // when the tenant's cache changes whether it is at its cap.
                () = leading.turned() => self.look_again(),
                () = fill_changed(&mut fills) => self.look_again(),
            }
            if self.events.is_closed() {
                return;
            }
            if self.listed
                && !self.catalog.scanned()
                && self.entries.values().all(|e| e.attempted.is_some())
            {
                self.catalog.mark_scanned();
            }
        }
    }

    fn observe(
        &mut self,
        event: watcher::Event<PluginResource>,
        relisted: &mut Option<BTreeSet<String>>,
    ) {
        match event {
            watcher::Event::Init => *relisted = Some(BTreeSet::new()),
            watcher::Event::InitApply(object) => {
                if let Some(seen) = relisted {
                    seen.insert(object.name_any());
                }
                self.applied(object);
            }
            watcher::Event::InitDone => {
                let seen = relisted.take().unwrap_or_default();
                let gone: Vec<String> = self
                    .entries
                    .keys()
                    .filter(|name| !seen.contains(*name))
                    .cloned()
                    .collect();
                for name in gone {
                    self.deleted(&name);
                }
                self.listed = true;
            }
            watcher::Event::Apply(object) => self.applied(object),
            watcher::Event::Delete(object) => self.deleted(&object.name_any()),
        }
    }

    /// A Plugin seen: a new spec is an outside change, anything else (the echo of a status
    /// write) waits for a retry already scheduled.
    fn applied(&mut self, object: PluginResource) {
        let name = object.name_any();
        let cause = match self.entries.get_mut(&name) {
            Some(entry) => {
                let changed = entry.object.spec != object.spec;
                entry.object = object;
                if changed { Cause::Outside } else { Cause::Echo }
            }
            None => {
                self.entries.insert(
                    name.clone(),
                    Entry {
                        object,
                        attempted: None,
                        serving: None,
                        tag: TagCheck::NotAsked,
                        signature: None,
                        fallback: None,
                        attempt: Attempt::Pending,
                        retrying: false,
                        candidate_attempted: None,
                        candidate: None,
                        candidate_status: None,
                    },
                );
                Cause::Outside
            }
        };
        self.queue.add(key_of(&name), cause);
    }

    /// Every Plugin's key again: its status is brought up to date (written if it changed).
    fn look_again(&self) {
        for name in self.entries.keys() {
            self.queue.add(key_of(name), Cause::Resync);
        }
    }

    fn deleted(&mut self, name: &str) {
        self.arbiter.stop_waiting(name);
        let Some(entry) = self.entries.remove(name) else {
            return;
        };
        if let Some((plugin, _)) = entry.candidate {
            let file = self.candidate_file_of(name);
            let _ = self.candidates.send(PluginEvent::Removed { file, plugin });
        }
        if let Some((plugin, _)) = entry.serving {
            let kind = KindKey::of(plugin.info());
            self.release(&kind);
            self.emit(PluginEvent::Removed {
                file: self.file_of(name),
                plugin,
            });
        }
    }

    /// Frees `kind`; Plugins refused because another served it get another attempt.
    fn release(&mut self, kind: &KindKey) {
        for name in self.arbiter.release(kind) {
            if let Some(entry) = self.entries.get_mut(&name) {
                entry.attempted = None;
                self.queue.add(key_of(&name), Cause::Outside);
            }
        }
    }

    /// One turn of a Plugin's key: attempts its spec if undecided or a retry is due, its
    /// candidate if that changed, then brings its status up to date (a leader only; no write
    /// when nothing changed). A transient refusal is retried on the queue's backoff.
    async fn handle(&mut self, name: &str) -> Finish {
        let Some(entry) = self.entries.get(name) else {
            return Finish::Done;
        };
        if entry.retrying || entry.attempted.as_ref() != Some(&entry.object.spec) {
            self.attempt(name).await;
        }
        if self
            .entries
            .get(name)
            .is_some_and(|e| e.candidate_attempted != e.object.spec.candidate)
        {
            self.attempt_candidate(name).await;
        }
        self.sync_status(name).await;
        match self.entries.get(name) {
            Some(entry) if entry.retrying => Finish::Retry,
            _ => Finish::Done,
        }
    }
}

/// The reason a Plugin is refused for a kind another Plugin serves.
const CONFLICT: &str = "KindConflict";

impl<L: Loader> Run<L> {
    /// How events and the catalog name a Plugin's source: `Plugin/NAME` (a TenantPlugin's:
    /// `TenantPlugin/NAMESPACE/NAME`).
    fn file_of(&self, name: &str) -> PathBuf {
        self.objects.file_of(name)
    }

    /// How candidate events name a Plugin's candidate: `Plugin/NAME/candidate` (its parent
    /// directory is the serving version's name).
    fn candidate_file_of(&self, name: &str) -> PathBuf {
        self.file_of(name).join("candidate")
    }
}

/// Returns when the tenant's cache may say something else of its cap; never without one.
async fn fill_changed(changes: &mut Option<watch::Receiver<Stores>>) {
    if let Some(changes) = changes
        && changes.changed().await.is_ok()
    {
        return;
    }
    // No cap, or the cap is gone (it lives as long as the source): nothing to follow.
    std::future::pending::<()>().await;
}

/// A Plugin's key on the queue.
fn key_of(name: &str) -> ObjectKey {
    ObjectKey {
        namespace: None,
        name: name.to_owned(),
    }
}
