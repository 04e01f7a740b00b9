//! The host's part in sharding: this replica's membership, and the task that moves its share:
//! the leader's coordinator (by label), or each replica's own (server-side).

use std::sync::Arc;

use kube::Client;
use tokio_util::sync::CancellationToken;

use super::ManagerError;
use super::controllers::ControllersView;
use crate::fence::Fence;
use crate::leader::{LeaderConfig, Leadership};
use crate::shard::coordinator::Coordinator;
use crate::shard::metrics::ShardMetrics;
use crate::shard::share::Share;
use crate::shard::{Mode, ShardConfig, check_identity, members};

/// Holds this replica's own shard Lease (`None` when not sharded): it makes the replica a member
/// and fences its reconciles' writes. Sharded server-side when the API server offers
/// `shardSelector`, else by the owner label.
pub(super) async fn join(
    client: &Client,
    shard: Option<&ShardConfig>,
) -> Result<Option<(Leadership, LeaderConfig, Mode)>, ManagerError> {
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
    let lease = members::lease_config(config);
    Ok(Some((
        Leadership::start(client.clone(), &lease).await?,
        lease,
        mode,
    )))
}

/// Moves this replica's server-side share as members come and go (`crate::shard::share`),
/// reading and annotating the shard Leases with `client`, until `stop`.
pub(super) fn follow_members(
    (client, config): (Client, &ShardConfig),
    (share, metrics): (Share, ShardMetrics),
    stop: CancellationToken,
) {
    tokio::spawn(crate::shard::share::run(
        client,
        config.clone(),
        share,
        metrics,
        stop,
    ));
}

/// Starts the coordinator: while `leading` is open, it places the parents of the kinds `view`
/// serves, writing with `client` (built by the same fence), until `stop`.
pub(super) fn coordinate(
    (client, config, namespace): (Client, &ShardConfig, Option<String>),
    (view, metrics): (ControllersView, ShardMetrics),
    leading: Fence,
    stop: CancellationToken,
) {
    let coordinator = Coordinator {
        client,
        config: config.clone(),
        kinds: Arc::new(move || view.parent_kinds()),
        namespace,
        metrics,
    };
    tokio::spawn(coordinator.run(leading, stop));
}
