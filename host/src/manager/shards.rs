//! The host's part in sharding: this replica's membership, and the leader's coordinator task.

use std::sync::Arc;

use kube::Client;
use tokio_util::sync::CancellationToken;

use super::ManagerError;
use super::controllers::ControllersView;
use crate::fence::Fence;
use crate::leader::{LeaderConfig, Leadership};
use crate::shard::coordinator::Coordinator;
use crate::shard::metrics::ShardMetrics;
use crate::shard::{ShardConfig, check_identity, members};

/// Holds this replica's own shard Lease (`None` when not sharded): it makes the replica a member
/// and fences its reconciles' writes.
pub(super) async fn join(
    client: &Client,
    shard: Option<&ShardConfig>,
) -> Result<Option<(Leadership, LeaderConfig)>, ManagerError> {
    let Some(config) = shard else {
        return Ok(None);
    };
    check_identity(&config.identity)?;
    match crate::shard::server_side::offered(client).await {
        Ok(true) => tracing::info!(
            "the API server offers shardSelector (server-side sharded list and watch); this host still shards by the owner label"
        ),
        Ok(false) => {}
        Err(e) => {
            tracing::debug!(error = %crate::chain::Chain(&e), "reading the OpenAPI v3 document for shardSelector failed")
        }
    }
    let lease = members::lease_config(config);
    Ok(Some((
        Leadership::start(client.clone(), &lease).await?,
        lease,
    )))
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
