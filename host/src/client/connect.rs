//! A client for a kubeconfig, or for what kube infers (`KUBECONFIG`, `~/.kube/config`,
//! in-cluster): the one way every command connects to a cluster.

use std::path::{Path, PathBuf};

use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};

use super::ClientLimits;

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// No cluster is configured (no `--kubeconfig`, `KUBECONFIG`, `~/.kube/config` or in-cluster config).
    /// (One line on purpose: the inference details are logged at debug level.)
    #[error(
        "no Kubernetes cluster configured (use --kubeconfig PATH, or `weir dev` for the embedded emulator)"
    )]
    NoCluster,
    /// The kubeconfig file could not be read or used.
    #[error("cannot use kubeconfig {path}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The client could not be built from the configuration.
    #[error("cannot build a Kubernetes client")]
    Client(#[source] kube::Error),
}

/// A client for `kubeconfig`, or the usual inference, rate-limited by `limits`, fairly between
/// plugins, and honouring the server's pushback ([`super::build`]); its requests carry
/// `user_agent` (when given) instead of [`super::USER_AGENT`].
pub async fn connect(
    kubeconfig: Option<&Path>,
    limits: ClientLimits,
    user_agent: Option<&str>,
) -> Result<Client, ConnectError> {
    let mut config = match kubeconfig {
        Some(path) => {
            let unusable = |source| ConnectError::Kubeconfig {
                path: path.to_owned(),
                source,
            };
            let kc = Kubeconfig::read_from(path).map_err(unusable)?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(unusable)?
        }
        None => Config::infer().await.map_err(|e| {
            tracing::debug!(error = %e, "no cluster found");
            ConnectError::NoCluster
        })?,
    };
    if let Some(agent) = user_agent.and_then(|a| http::HeaderValue::from_str(a).ok()) {
        config.headers.push((http::header::USER_AGENT, agent));
    }
    super::build(config, limits).map_err(ConnectError::Client)
}
