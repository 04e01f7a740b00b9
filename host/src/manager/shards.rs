//! The host's part in sharding: this replica's membership, the gate and narrowing its
//! controllers and informers are given, and the task that moves its share: the leader's
//! coordinator (by label), or each replica's own (server-side).

use std::sync::Arc;
use std::time::Duration;

use kube::Client;

use super::config::ManagerError;
use super::controllers::ControllersView;
use super::runnables::{Runnables, Stage};
use crate::fence::Fence;
use crate::leader::{LeaderConfig, Leadership};
use crate::plugin::ResourceKind;
use crate::reconcile::gate::Gate;
use crate::runtime::Narrowing;
use crate::shard::coordinator::Coordinator;
use crate::shard::metrics::ShardMetrics;
use crate::shard::placement;
use crate::shard::share::{Follower, Share};
use crate::shard::{Mode, ShardConfig, check_identity, members};

/// A sharded replica: its own shard Lease (which makes it a member and fences its reconciles'
/// writes), the way it selects its share, and what the leader's `/plugins` shows of it.
pub(super) struct Sharding {
    config: ShardConfig,
    member: Leadership,
    lease: LeaderConfig,
    /// Sharded server-side: the served ranges, shared by the parent watches and the workers.
    share: Option<Share>,
    metrics: ShardMetrics,
}

impl Sharding {
    /// Holds this replica's own shard Lease (`None` when not sharded). Sharded server-side when
    /// the API server offers `shardSelector`, else by the owner label.
    pub(super) async fn join(
        client: &Client,
        shard: Option<&ShardConfig>,
        metrics: ShardMetrics,
    ) -> Result<Option<Self>, ManagerError> {
        let Some(config) = shard else {
            return Ok(None);
        };
        check_identity(&config.identity)?;
        let mode = match crate::shard::server_side::offered(client).await {
            Ok(true) => Mode::ServerSide,
            Ok(false) => Mode::Labels,
            Err(e) => {
                tracing::debug!(error = %crate::chain::Chain(&e), "reading the OpenAPI v3 document for shardSelector failed");
                Mode::Labels
            }
        };
        tracing::info!(mode = mode.as_str(), "sharding parents");
        metrics.running(mode);
        let lease = members::lease_config(config);
        Ok(Some(Self {
            config: config.clone(),
            member: Leadership::start(client.clone(), &lease).await?,
            lease,
            share: (mode == Mode::ServerSide).then(Share::new),
            metrics,
        }))
    }

    /// The controllers' gate (`crate::shard::gate`).
    pub(super) fn gate(&self) -> Arc<dyn Gate> {
        crate::shard::gate(self.share.as_ref())
    }

    /// How the informers narrow parents and children to this replica's share.
    pub(super) fn narrowing(&self, client: &Client) -> Narrowing {
        crate::shard::narrowing(&self.config.identity, self.share.as_ref(), client)
    }

    /// The controllers' writes stop at the step-down moment of this replica's own shard Lease
    /// (its fence is the same gate as the leader's, on another Lease); how long stepped-down
    /// workers may finish.
    pub(super) fn writer(&self) -> (Fence, Duration) {
        (self.member.fence(), self.lease.abandon_after())
    }

    /// This replica's member name and the coordinator's view, for `/plugins`.
    pub(super) fn listed(&self) -> (String, ShardMetrics) {
        (self.config.identity.clone(), self.metrics.clone())
    }

    /// Adds the runnable that moves this replica's share ([`crate::shard::placement`]):
    /// server-side, its own, from the host's start to its stop (reading and annotating the shard
    /// Leases with `client`); by labels, the coordinator, which needs leadership (`leading`) and
    /// places the parents of the kinds `view` serves, writing with `leader_client` (built by the
    /// same fence).
    pub(super) fn placement(
        &self,
        runnables: &mut Runnables,
        client: &Client,
        leader_client: &Client,
        namespace: Option<String>,
        view: ControllersView,
        leading: Fence,
    ) {
        let every = self.config.assign_every;
        if let Some(share) = &self.share {
            let follower = Follower::new(
                client.clone(),
                &self.config,
                share.clone(),
                self.metrics.clone(),
            );
            runnables.always(Stage::Beside, "shard share", move |stop| {
                placement::run(follower, every, stop)
            });
            return;
        }
        let (client, config, metrics) = (
            leader_client.clone(),
            self.config.clone(),
            self.metrics.clone(),
        );
        let kinds: Arc<dyn Fn() -> Vec<ResourceKind> + Send + Sync> =
            Arc::new(move || view.parent_kinds());
        runnables.leading(Stage::Beside, "shard coordinator", leading, move |stop| {
            let coordinator = Coordinator::new(
                client.clone(),
                config.clone(),
                kinds.clone(),
                namespace.clone(),
                metrics.clone(),
            );
            placement::run(coordinator, every, stop)
        });
    }

    /// Lets go of the shard Lease (its parents move on to the other members).
    pub(super) async fn release(self) {
        self.member.release().await;
    }
}
