//! Admission of a plugin before it is served: the host's policy, checked against discovery.
//!
//! Every plugin source goes through [`Admission::admit`]: a plugin whose parent is not its own
//! custom resource, or whose kinds the policy does not allow or the cluster serves at another
//! scope, is refused like a file that is not a component (logged, counted, and whatever served
//! the kind before keeps serving).

use std::path::Path;
use std::sync::Arc;

use kube::Client;

use crate::hotload::{EngineLoader, Loader};
use crate::plugin::{LoadError, Plugin, PluginInfo};
use crate::policy::{self, Discovered, Policy, PolicyRefusal};

/// Why a plugin is not served.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    /// The file is not a loadable component.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The host's policy refuses what the plugin declared.
    #[error(transparent)]
    Refused(#[from] PolicyRefusal),
    /// The cluster's discovery could not be asked (not a refusal: the next change retries).
    #[error("cannot ask the API server about the kinds of plugin {plugin}")]
    Discovery {
        /// `name@version`.
        plugin: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// The policy and the cluster a plugin is admitted against.
#[derive(Clone)]
pub struct Admission {
    client: Client,
    policy: Arc<Policy>,
}

impl Admission {
    /// Admission under `policy`, asking `client`'s API server for the kinds' scopes.
    pub fn new(client: Client, policy: Arc<Policy>) -> Self {
        Self { client, policy }
    }

    /// Admits `info`, or says why not.
    pub async fn admit(&self, info: &PluginInfo) -> Result<(), AdmissionError> {
        let found = Discovered::for_plugin(&self.client, info)
            .await
            .map_err(|source| AdmissionError::Discovery {
                plugin: format!("{}@{}", info.name, info.version),
                source,
            })?;
        let admitted = policy::admit(&self.policy, info, &found)?;
        if let Some(grant) = admitted.grant() {
            tracing::warn!(
                plugin = %info.name,
                version = %info.version,
                widened = %grant.lines().join("; "),
                "admitted with scope widened by the policy's entry for it"
            );
        }
        Ok(())
    }
}

/// The directory source's loader: compiles a file, then admits the plugin it holds. It runs on
/// the loader's own thread, so it waits for discovery on the host's runtime.
pub struct AdmittingLoader {
    /// Compiles files.
    pub inner: EngineLoader,
    /// Admits what they hold.
    pub admission: Admission,
    /// The host's runtime.
    pub runtime: tokio::runtime::Handle,
}

impl Loader for AdmittingLoader {
    type Plugin = Plugin;
    type Error = AdmissionError;

    fn load(&self, file: &Path) -> Result<Plugin, AdmissionError> {
        let plugin = self.inner.load(file)?;
        self.runtime.block_on(self.admission.admit(plugin.info()))?;
        Ok(plugin)
    }

    fn load_verified(&self, file: &Path, sha256: &str) -> Result<Plugin, AdmissionError> {
        let plugin = self.inner.load_verified(file, sha256)?;
        self.runtime.block_on(self.admission.admit(plugin.info()))?;
        Ok(plugin)
    }

    fn reason(error: &AdmissionError) -> &'static str {
        match error {
            AdmissionError::Load(e) => crate::hotload::load_reason(e),
            AdmissionError::Refused(_) => "NotAdmitted",
            AdmissionError::Discovery { .. } => "DiscoveryFailed",
        }
    }
}
