//! A host whose plugins come and go: the hot loader feeds the fleet of controllers.
//!
//! This is what `weir run --plugins DIR` and `weir dev` run. It differs from
//! [`crate::run::Host`] (a fixed set of plugins) only in where the plugins come
//! from; controllers, leader election and the operations server are the same.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use kube::Client;
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::dir::Loaded;
use super::fleet::{Fleet, FleetView};
use super::{Catalog, CatalogRow, Config, HotLoader, HotloadMetrics, Loader, PluginEvent, Result};
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::plugin::{Engine, Limits, LoadError, Plugin, PluginInfo};
use crate::run::HostConfig;
use crate::server;

impl Loaded for Plugin {
    fn info(&self) -> &PluginInfo {
        Plugin::info(self)
    }
    fn sha256(&self) -> String {
        Plugin::sha256(self).to_owned()
    }
}

/// Loads files with the sandbox's engine (its compile cache makes a reload of known bytes cheap).
pub struct EngineLoader {
    /// The shared engine.
    pub engine: Engine,
    /// Limits every loaded plugin's calls run under.
    pub limits: Limits,
}

impl Loader for EngineLoader {
    type Plugin = Plugin;
    type Error = LoadError;
    fn load(&self, file: &Path) -> std::result::Result<Plugin, LoadError> {
        self.engine.load_file(file, self.limits)
    }
}

/// Everything a hot-loading host runs with.
#[derive(Clone, Debug)]
pub struct HotHostConfig {
    /// Controllers, call concurrency, leader election, listen address.
    pub host: HostConfig,
    /// The plugins directory and how it is watched.
    pub plugins: Config,
    /// Limits of every plugin call.
    pub limits: Limits,
    /// Install each plugin's CRD before starting its controller (`weir dev`; in a
    /// cluster CRDs are deployed, and the host has no right to write them).
    pub install_crds: bool,
}

/// A running hot-loading host.
pub struct HotHost {
    loader: HotLoader,
    metrics: Arc<Metrics>,
    hotload_metrics: HotloadMetrics,
    view: FleetView,
    stop: CancellationToken,
    main: tokio::task::JoinHandle<()>,
    addr: Option<SocketAddr>,
}

impl HotHost {
    /// Loads what DIR holds, starts a controller per plugin, and follows DIR from then on.
    pub async fn start(client: Client, engine: Engine, config: HotHostConfig) -> Result<HotHost> {
        let mut metrics = Metrics::new();
        let hotload_metrics = HotloadMetrics::default();
        hotload_metrics.register(metrics.registry_mut());
        let metrics = Arc::new(metrics);
        let loader = EngineLoader {
            engine,
            limits: config.limits,
        };
        let (hot, events) =
            HotLoader::start(config.plugins.clone(), loader, hotload_metrics.clone())?;
        let leadership = match &config.host.leader {
            Some(lc) => Some(Leadership::start(client.clone(), lc).await?),
            None => None,
        };
        let client_for_crds = client.clone();
        let fleet = Fleet::new(
            client,
            metrics.clone(),
            config.host.controller.clone(),
            config.host.max_concurrent_calls,
            leadership.as_ref().map(|l| l.is_leader.clone()),
        );
        let view = fleet.view();
        let stop = CancellationToken::new();
        let addr = match config.host.listen {
            Some(listen) => {
                let (catalog, v) = (hot.catalog(), view.clone());
                let ready: server::Readiness = Arc::new(move || ready(&catalog, &v));
                let extra = Router::new()
                    .route("/plugins", get(plugins))
                    .with_state(Listing {
                        catalog: hot.catalog(),
                        metrics: metrics.clone(),
                    });
                Some(server::serve_with(listen, metrics.clone(), ready, stop.clone(), extra).await?)
            }
            None => None,
        };
        let installer = config.install_crds.then(|| client_for_crds.clone());
        let main = tokio::spawn(drive(fleet, events, leadership, installer, stop.clone()));
        Ok(HotHost {
            loader: hot,
            metrics,
            hotload_metrics,
            view,
            stop,
            main,
            addr,
        })
    }

    /// The plugins served right now.
    pub fn catalog(&self) -> Catalog {
        self.loader.catalog()
    }

    /// The host's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Refusals and changes counted by the hot loader.
    pub fn hotload_metrics(&self) -> &HotloadMetrics {
        &self.hotload_metrics
    }

    /// The bound address of the operations server, if any.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Whether DIR was scanned once and every served kind's caches are synced.
    pub fn is_ready(&self) -> bool {
        ready(&self.loader.catalog(), &self.view)
    }

    /// Graceful stop: in-flight reconciles finish, the lease is released.
    pub async fn shutdown(self) {
        self.stop.cancel();
        if let Err(e) = self.main.await {
            tracing::warn!(error = %e, "host task failed");
        }
    }

    /// Waits until the host stops by itself (it lost its leadership).
    pub async fn wait(&mut self) {
        let _ = (&mut self.main).await;
    }
}

fn ready(catalog: &Catalog, view: &FleetView) -> bool {
    catalog.scanned() && view.len() == catalog.len() && view.synced()
}

/// Applies plugin events to the fleet until stopped or the lease is lost.
async fn drive(
    mut fleet: Fleet,
    mut events: mpsc::UnboundedReceiver<PluginEvent<Plugin>>,
    leadership: Option<Leadership>,
    installer: Option<Client>,
    stop: CancellationToken,
) {
    let mut leading = leadership.as_ref().map(|l| l.is_leader.clone());
    loop {
        tokio::select! {
            () = stop.cancelled() => {
                tracing::info!("shutting down: finishing in-flight reconciles");
                break;
            }
            event = events.recv() => match event {
                Some(event) => {
                    if let (Some(client), PluginEvent::Added { plugin, .. } | PluginEvent::Replaced { new: plugin, .. }) = (&installer, &event) {
                        match super::install_crd(client, plugin.info()).await {
                            Ok(true) => tracing::info!(plugin = %plugin.label(), kind = %plugin.info().parent.kind, "CRD installed"),
                            Ok(false) => {}
                            Err(e) => tracing::warn!(error = %crate::chain::Chain(&e), "the controller starts anyway; its watch retries until the kind is served"),
                        }
                    }
                    fleet.apply(event).await
                }
                None => break,
            },
            () = lost(&mut leading) => {
                tracing::error!("lost the leader lease: stopping");
                break;
            }
        }
    }
    fleet.shutdown().await;
    if let Some(l) = leadership {
        l.release().await;
    }
}

/// Resolves once this replica led and then stopped leading; never without election.
async fn lost(leading: &mut Option<watch::Receiver<bool>>) {
    let Some(rx) = leading else {
        return std::future::pending().await;
    };
    if rx.wait_for(|l| *l).await.is_ok() {
        let _ = rx.wait_for(|l| !*l).await;
    }
}

#[derive(Clone)]
struct Listing {
    catalog: Catalog,
    metrics: Arc<Metrics>,
}

/// A served plugin with its reconcile counts, as `/plugins` lists it.
#[derive(Serialize)]
struct Listed {
    #[serde(flatten)]
    row: CatalogRow,
    reconciles: BTreeMap<&'static str, u64>,
}

async fn plugins(State(listing): State<Listing>) -> axum::Json<Vec<Listed>> {
    let rows = listing.catalog.rows();
    axum::Json(
        rows.into_iter()
            .map(|row| {
                let reconciles = ["success", "error", "refused", "gone"]
                    .into_iter()
                    .map(|r| (r, listing.metrics.reconciles_of(&row.name, r)))
                    .collect();
                Listed { row, reconciles }
            })
            .collect(),
    )
}
