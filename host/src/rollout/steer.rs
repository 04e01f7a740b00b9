//! `weir rollout`: an operator reads, promotes, pauses, resumes or aborts a rollout through its kept phase.
//!
//! The command talks to the cluster, never to a host: it writes a request into the rollout's
//! ConfigMap ([`super::store`]) and waits until the leader, whichever replica it is, has
//! carried it out and kept the phase that results (the leader's side is
//! `Controller::steer`). A request the leader cannot carry out (no candidate in place any
//! more) is answered with the reason.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::Phase;
use super::store::{Kept, PhaseStore, REFUSED, Request, StoreError, StoredPhase, config_map_name};

/// Why `weir rollout` could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SteerError {
    /// No cluster client.
    #[error(transparent)]
    Client(#[from] crate::client::ConnectError),
    /// The command's async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// Reading or writing the ConfigMap failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No phase is kept for the plugin.
    #[error(
        "no rollout of {plugin} is kept in namespace {namespace} (ConfigMap {config_map}); is --namespace the host's?"
    )]
    NoRollout {
        /// The plugin.
        plugin: String,
        /// Where it was looked for.
        namespace: String,
        /// The ConfigMap's name.
        config_map: String,
    },
    /// The rollout is over: nothing to steer.
    #[error("the rollout of {plugin} {version} is over: {phase}")]
    Over {
        /// The plugin.
        plugin: String,
        /// The candidate's version.
        version: String,
        /// Where it ended.
        phase: Phase,
    },
    /// The leader answered that it could not carry the request out.
    #[error("the host refused to {request} {plugin}: {reason}")]
    Refused {
        /// The plugin.
        plugin: String,
        /// What was asked.
        request: &'static str,
        /// The leader's reason.
        reason: String,
    },
    /// No host carried the request out in time (it stays asked: the leader carries it out
    /// when it sees it).
    #[error(
        "no host carried out `{request}` of {plugin} within {waited:?}; it stays pending in the ConfigMap"
    )]
    NotAnswered {
        /// The plugin.
        plugin: String,
        /// What was asked.
        request: &'static str,
        /// How long the command waited.
        waited: Duration,
    },
}

/// What `weir rollout` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    /// Print the kept phase, whether it is paused, and a request not carried out yet.
    Status,
    /// The candidate serves every parent now, whatever the phase.
    Promote,
    /// The phase stops stepping forward by itself (a failing candidate is still rolled back).
    Pause,
    /// The phase steps forward again.
    Resume,
    /// The serving version answers every parent again; the same bytes are not rolled out again.
    Abort,
}

/// Arguments of `weir rollout`.
#[derive(Debug, clap::Args)]
pub struct RolloutArgs {
    /// `status`, or a request the leading host carries out on the candidate in place.
    #[arg(value_enum)]
    pub action: Action,
    /// The plugin, as its `describe()` names it (the ConfigMap is `weir-rollout-PLUGIN`).
    pub plugin: String,
    /// The namespace where the host keeps rollouts: its leader Lease's (`--lease-namespace`),
    /// else the namespace it watches, else `default`.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Kubeconfig to use instead of KUBECONFIG, ~/.kube/config or the in-cluster config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// How long to wait for the leader to carry a request out (0: only ask).
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    pub wait: u64,
}

impl RolloutArgs {
    /// Runs the command (blocking: it owns its async runtime); returns what to print.
    pub fn execute(&self) -> Result<String, SteerError> {
        let runtime = tokio::runtime::Runtime::new().map_err(SteerError::Runtime)?;
        runtime.block_on(async {
            // A handful of requests: the host's default limit is no constraint.
            let limits = crate::client::ClientLimits::default();
            let client = crate::client::connect(self.kubeconfig.as_deref(), limits, None).await?;
            let store = PhaseStore::new(client, &self.namespace, "weir-cli");
            let request = match self.action {
                Action::Status => return status(&store, &self.plugin).await,
                Action::Promote => Request::Promote,
                Action::Pause => Request::Pause,
                Action::Resume => Request::Resume,
                Action::Abort => Request::Abort,
            };
            let waited = Duration::from_secs(self.wait);
            let kept = ask(&store, &self.plugin, request, waited).await?;
            Ok(match kept {
                Some(stored) => describe(&self.plugin, &stored),
                None => format!("asked to {} {}", request.as_str(), self.plugin),
            })
        })
    }
}

/// One line about a kept phase: `blog 0.2.0 (sha256 4f1c…): Canary 10%, paused`.
pub fn describe(plugin: &str, stored: &StoredPhase) -> String {
    let short = stored.sha256.get(..12).unwrap_or(&stored.sha256);
    let paused = if stored.paused { ", paused" } else { "" };
    format!(
        "{plugin} {} (sha256 {short}): {}{paused}",
        stored.version, stored.phase
    )
}

/// The kept phase of `plugin`'s rollout and a request not carried out yet, as lines.
pub async fn status(store: &PhaseStore, plugin: &str) -> Result<String, SteerError> {
    let kept = store.kept(plugin).await?;
    let stored = phase_of(store, plugin, &kept)?;
    let mut out = describe(plugin, stored);
    if let Some(request) = kept.request {
        out.push_str(&format!(
            "\nasked to {}; the leader has not carried it out yet",
            request.as_str()
        ));
    }
    Ok(out)
}

fn phase_of<'a>(
    store: &PhaseStore,
    plugin: &str,
    kept: &'a Kept,
) -> Result<&'a StoredPhase, SteerError> {
    kept.phase.as_ref().ok_or_else(|| SteerError::NoRollout {
        plugin: plugin.to_owned(),
        namespace: store.namespace().to_owned(),
        config_map: config_map_name(plugin),
    })
}

/// Asks the leader to carry out `request` on `plugin`'s rollout in progress and waits up to
/// `wait` until it has: the phase kept then (`None` when not waiting).
pub async fn ask(
    store: &PhaseStore,
    plugin: &str,
    request: Request,
    wait: Duration,
) -> Result<Option<StoredPhase>, SteerError> {
    let kept = store.kept(plugin).await?;
    let stored = phase_of(store, plugin, &kept)?;
    if !matches!(stored.phase, Phase::Shadow | Phase::Canary { .. }) {
        return Err(SteerError::Over {
            plugin: plugin.to_owned(),
            version: stored.version.clone(),
            phase: stored.phase.clone(),
        });
    }
    store.ask(plugin, request).await?;
    if wait.is_zero() {
        return Ok(None);
    }
    let started = Instant::now();
    while started.elapsed() < wait {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let kept = store.kept(plugin).await?;
        if kept.request.is_some() {
            continue;
        }
        if let Some(reason) = kept.answer.as_deref().and_then(|a| a.strip_prefix(REFUSED)) {
            return Err(SteerError::Refused {
                plugin: plugin.to_owned(),
                request: request.as_str(),
                reason: reason.to_owned(),
            });
        }
        return Ok(kept.phase);
    }
    Err(SteerError::NotAnswered {
        plugin: plugin.to_owned(),
        request: request.as_str(),
        waited: wait,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_it_was_written() {
        for r in [
            Request::Promote,
            Request::Pause,
            Request::Resume,
            Request::Abort,
        ] {
            assert_eq!(r.as_str().parse::<Request>(), Ok(r));
        }
        assert!("promoted".parse::<Request>().is_err());
    }

    #[test]
    fn a_kept_phase_is_described_on_one_line() {
        let stored = StoredPhase {
            sha256: "4f1c0123456789abcdef".into(),
            version: "0.2.0".into(),
            phase: Phase::Canary { percent: 10 },
            paused: true,
        };
        assert_eq!(
            describe("blog", &stored),
            "blog 0.2.0 (sha256 4f1c01234567): Canary 10%, paused"
        );
    }
}
