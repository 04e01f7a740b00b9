//! The host's part in sharding: this replica's membership, the gate and narrowing its
//! controllers and informers are given, and the task that moves its share: the leader's
//! coordinator (by label), or each replica's own (server-side).

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio_util::sync::CancellationToken;

use super::ManagerError;
use super::controllers::ControllersView;
use crate::fence::Fence;
use crate::leader::{LeaderConfig, Leadership};
use crate::reconcile::gate::Gate;
use crate::runtime::Narrowing;
use crate::shard::coordinator::Coordinator;
use crate::shard::metrics::ShardMetrics;
use crate::shard::share::Share;
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

    /// Starts the task that moves this replica's share until `stop`: server-side, its own
    /// (reading and annotating the shard Leases with `client`); by labels, the coordinator,
    /// which places the parents of the kinds `view` serves while `leading` is open, writing
    /// with `leader_client` (built by the same fence).
    pub(super) fn start(
        &self,
        client: &Client,
        leader_client: &Client,
        namespace: Option<String>,
        view: ControllersView,
        leading: Fence,
        stop: CancellationToken,
    ) {
        if let Some(share) = &self.share {
            tokio::spawn(crate::shard::share::run(
                client.clone(),
                self.config.clone(),
                share.clone(),
                self.metrics.clone(),
                stop,
            ));
            return;
        }
        let coordinator = Coordinator {
            client: leader_client.clone(),
            config: self.config.clone(),
            kinds: Arc::new(move || view.parent_kinds()),
            namespace,
            metrics: self.metrics.clone(),
        };
        tokio::spawn(coordinator.run(leading, stop));
    }

    /// Lets go of the shard Lease (its parents move on to the other members).
    pub(super) async fn release(self) {
        self.member.release().await;
    }
}
