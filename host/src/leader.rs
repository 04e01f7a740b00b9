//! Leader election on a `coordination.k8s.io` Lease, so two replicas of the host never both write.
//!
//! Only the leader runs reconcile workers; a standby keeps its caches warm and takes over when
//! the leader's lease expires or is released on shutdown.

use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Which Lease to hold and for how long.
#[derive(Clone, Debug)]
pub struct LeaderConfig {
    /// Lease name; every replica of one deployment uses the same.
    pub lease: String,
    /// Namespace of the Lease.
    pub namespace: String,
    /// This replica's identity (the pod name in a cluster).
    pub identity: String,
    /// Seconds the lease is valid after its last renewal.
    pub duration_secs: u64,
    /// Seconds before expiry at which the holder renews.
    pub grace_secs: u64,
}

impl LeaderConfig {
    /// Defaults as in client-go (15 s lease), for `identity`.
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            lease: "weir-leader".into(),
            namespace: "default".into(),
            identity: identity.into(),
            duration_secs: 15,
            grace_secs: 5,
        }
    }
}

/// Leader election failed to start.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The Lease could not be read or created.
    #[error("cannot set up the lease {namespace}/{lease}")]
    Lease {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        lease: String,
        /// The underlying error.
        #[source]
        source: LeaseManagerError,
    },
}

/// A running election: `is_leader` flips as the lease is won or lost.
pub struct Leadership {
    /// `true` while this replica holds the lease.
    pub is_leader: watch::Receiver<bool>,
    task: JoinHandle<Result<kube_lease_manager::LeaseManager, LeaseManagerError>>,
}

impl Leadership {
    /// Starts competing for the lease in a background task.
    pub async fn start(client: Client, config: &LeaderConfig) -> Result<Self, LeaderError> {
        let manager = LeaseManagerBuilder::new(client, &config.lease)
            .with_namespace(&config.namespace)
            .with_identity(&config.identity)
            .with_duration(config.duration_secs)
            .with_grace(config.grace_secs)
            .with_field_manager(format!("weir-leader/{}", config.identity))
            .build()
            .await
            .map_err(|source| LeaderError::Lease {
                namespace: config.namespace.clone(),
                lease: config.lease.clone(),
                source,
            })?;
        let (is_leader, task) = manager.watch().await;
        Ok(Self { is_leader, task })
    }

    /// Waits until this replica leads. Returns `false` if the election ended first.
    pub async fn acquired(&mut self) -> bool {
        self.is_leader.wait_for(|l| *l).await.is_ok()
    }

    /// Releases the lease (if held) so a standby takes over at once.
    pub async fn release(self) {
        let Self { is_leader, task } = self;
        drop(is_leader);
        match task.await {
            Ok(Ok(_)) => tracing::info!("leader lease released"),
            Ok(Err(e)) => {
                tracing::warn!(error = %crate::chain::Chain(&e), "releasing the leader lease failed")
            }
            Err(e) => tracing::warn!(error = %e, "the leader election task failed"),
        }
    }
}
