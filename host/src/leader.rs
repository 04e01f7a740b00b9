//! Leader election on a `coordination.k8s.io` Lease, so two replicas of the host never both write.
//!
//! Only the leader runs reconcile workers and writes; a standby keeps its caches warm and takes
//! over when the leader's lease expires or is released on shutdown. The election's one output is
//! a [`Fence`] ([`Leadership::fence`]): open while this replica leads, it is how every part of
//! the host asks whether it leads, and the client every writer writes through. A leader that
//! cannot show a renewal of its lease steps down before the lease could expire (as client-go's
//! renew deadline does) and stands again: the fence shuts [`LeaderConfig::step_down_margin`]
//! before the last renewal it read runs out, and the workers get [`LeaderConfig::abandon_after`]
//! to finish what is in flight; both together end before another replica may take the lease. No
//! write leaves after that moment, however late a worker or the guard task runs.

use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::fence::Fence;

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

impl LeaderConfig {
    /// How long before its lease runs out a leader that has not seen a renewal steps down:
    /// half the grace period.
    pub fn step_down_margin(&self) -> Duration {
        Duration::from_millis(self.grace_secs * 500)
    }

    /// How long stepped-down workers may finish their in-flight reconciles before they are
    /// abandoned: half the step-down margin, so they end before the lease could be taken.
    pub fn abandon_after(&self) -> Duration {
        self.step_down_margin() / 2
    }

    /// How often the leader reads its lease back to see its renewals.
    fn check_every(&self) -> Duration {
        Duration::from_millis(self.duration_secs * 1000 / 8)
            .clamp(Duration::from_millis(50), Duration::from_secs(2))
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

/// A running election: its fence opens and shuts as the lease is won, lost, won again.
pub struct Leadership {
    /// The lease manager's task; taken by [`Leadership::release`].
    task: Option<JoinHandle<Result<kube_lease_manager::LeaseManager, LeaseManagerError>>>,
    /// Holds the lease manager's own receiver: ending it releases the lease.
    guard: JoinHandle<()>,
    /// Open until the step-down moment of the last renewal read, while leading.
    fence: Fence,
}

impl Drop for Leadership {
    /// Dropped without [`Leadership::release`] (a killed host): both tasks end at once and the
    /// lease is left to expire, as after SIGKILL.
    fn drop(&mut self) {
        self.fence.close();
        self.guard.abort();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Leadership {
    /// Starts competing for the lease in a background task.
    pub async fn start(client: Client, config: &LeaderConfig) -> Result<Self, LeaderError> {
        let manager = LeaseManagerBuilder::new(client.clone(), &config.lease)
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
        let (held, task) = manager.watch().await;
        let fence = Fence::closed();
        let guard = tokio::spawn(guard(
            client_api(client, config),
            config.clone(),
            held,
            fence.clone(),
        ));
        Ok(Self {
            task: Some(task),
            guard,
            fence,
        })
    }

    /// The gate of this replica's writes and the answer to "does it lead": open only while it
    /// leads (see [`crate::fence`]).
    pub fn fence(&self) -> Fence {
        self.fence.clone()
    }

    /// Releases the lease (if held) so a standby takes over at once.
    pub async fn release(mut self) {
        // Ending the guard drops the lease manager's receiver: it releases the lease and ends.
        self.fence.close();
        self.guard.abort();
        let _ = (&mut self.guard).await;
        let Some(task) = self.task.take() else { return };
        match task.await {
            Ok(Ok(_)) => tracing::info!("leader lease released"),
            Ok(Err(e)) => {
                tracing::warn!(error = %crate::chain::Chain(&e), "releasing the leader lease failed")
            }
            Err(e) => tracing::warn!(error = %e, "the leader election task failed"),
        }
    }
}

fn client_api(client: Client, config: &LeaderConfig) -> Api<Lease> {
    Api::namespaced(client, &config.namespace)
}

/// Until when the lease is ours, as its last renewal says; `None` if another replica holds it.
fn held_until(lease: &Lease, identity: &str) -> Option<SystemTime> {
    let spec = lease.spec.as_ref()?;
    if spec.holder_identity.as_deref() != Some(identity) {
        return None;
    }
    let renewed = SystemTime::from(spec.renew_time.as_ref()?.0);
    let secs = u64::try_from(spec.lease_duration_seconds?).ok()?;
    Some(renewed + Duration::from_secs(secs))
}

/// How long the guard sleeps: until its next read of the lease, or until the step-down moment
/// (`until` less the margin) when that comes sooner.
fn next_check(config: &LeaderConfig, until: Option<SystemTime>, margin: Duration) -> Duration {
    let step_down = until
        .and_then(|u| u.checked_sub(margin))
        .map(|at| at.duration_since(SystemTime::now()).unwrap_or_default());
    step_down.map_or(config.check_every(), |d| d.min(config.check_every()))
}

/// Opens the fence only while the lease manager says this replica holds the lease *and* the
/// lease, read back, runs past now plus the step-down margin. Unreadable (API down): the last
/// renewal read decides.
async fn guard(
    api: Api<Lease>,
    config: LeaderConfig,
    mut held: watch::Receiver<bool>,
    fence: Fence,
) {
    let margin = config.step_down_margin();
    let mut until: Option<SystemTime> = None;
    let mut was_leading = false;
    loop {
        let claimed = *held.borrow_and_update();
        if claimed {
            // Bounded: a client that retries a failing API server must not hold the guard past
            // the moment it has to step down.
            match tokio::time::timeout(config.check_every(), api.get_opt(&config.lease)).await {
                Ok(Ok(lease)) => until = lease.and_then(|l| held_until(&l, &config.identity)),
                Ok(Err(e)) => tracing::debug!(error = %e, "cannot read the leader lease back"),
                Err(_) => tracing::debug!("reading the leader lease back timed out"),
            }
        } else {
            until = None;
        }
        let leading = claimed && until.is_some_and(|u| SystemTime::now() + margin < u);
        // The fence closes at the step-down moment by itself, even if this task runs late.
        match until
            .and_then(|u| u.checked_sub(margin))
            .filter(|_| leading)
        {
            Some(step_down) => fence.open_until(step_down),
            None => fence.close(),
        }
        if was_leading && !leading {
            tracing::warn!(identity = %config.identity, "leader lease not renewed in time: stepping down");
        }
        was_leading = leading;
        tokio::select! {
            changed = held.changed() => if changed.is_err() {
                fence.close();
                return;
            },
            // Wake at the next check, or at the step-down moment if that comes first.
            () = tokio::time::sleep(next_check(&config, until.filter(|_| leading), margin)) => {}
        }
    }
}

/// Seconds before a Lease of `duration_secs` runs out at which its holder renews it: a third
/// (client-go's 10 s renew deadline of a 15 s Lease), at least one second.
pub fn lease_grace(duration_secs: u64) -> u64 {
    (duration_secs / 3).max(1)
}
