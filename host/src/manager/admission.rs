//! Admission of a plugin before it is served: the host's policy, checked against discovery.
//!
//! Every plugin source goes through [`Admission::admit`]: a plugin whose parent is not its own
//! custom resource, or whose kinds the policy does not allow or the cluster serves at another
//! scope, is refused like a file that is not a component (logged, counted, and whatever served
//! the kind before keeps serving). So is a plugin the policy's entry widens beyond the one
//! namespace a host restricted to it watches ([`within_watched`]): that host could neither see
//! its objects there nor be granted them.

use std::path::Path;
use std::sync::Arc;

use kube::Client;

use crate::hotload::{EngineLoader, Loader};
use crate::plugin::{LoadError, Plugin, PluginInfo};
use crate::policy::{self, Discovered, Grant, Policy, PolicyRefusal};

/// Why a plugin is not served.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    /// The file is not a loadable component.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The host's policy refuses what the plugin declared.
    #[error(transparent)]
    Refused(#[from] PolicyRefusal),
    /// The policy's entry widens the plugin beyond the one namespace the host watches.
    #[error(
        "plugin {plugin}: the policy's entry for it widens it to {widened}, which a host watching only namespace {namespace:?} cannot serve (run the host on all namespaces to serve it)"
    )]
    BeyondWatchedNamespace {
        /// `name@version`.
        plugin: String,
        /// The namespace the host watches.
        namespace: String,
        /// The widenings that reach beyond it (`; `-separated, as `weir plugins` says them).
        widened: String,
    },
    /// The host's policy refuses a tenant's plugin for its namespace.
    #[error(transparent)]
    Tenant(#[from] crate::policy::TenantRefusal),
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

/// The policy and the cluster a plugin is admitted against, and the namespace the host
/// watches if it is restricted to one; for a tenant's plugins, the tenant's namespace.
#[derive(Clone)]
pub struct Admission {
    client: Client,
    policy: Arc<Policy>,
    watched: Option<String>,
    tenant: Option<String>,
}

impl Admission {
    /// Admission under `policy`, asking `client`'s API server for the kinds' scopes, for a
    /// host watching only namespace `watched` (all namespaces: `None`).
    pub fn new(client: Client, policy: Arc<Policy>, watched: Option<String>) -> Self {
        Self {
            client,
            policy,
            watched,
            tenant: None,
        }
    }

    /// The same admission for the plugins of tenant namespace `namespace`
    /// ([`crate::policy::admit_tenant`]: its `tenants:` entry, nothing cluster-scoped, no
    /// widened grant).
    pub fn tenant(&self, namespace: &str) -> Self {
        Self {
            tenant: Some(namespace.to_owned()),
            ..self.clone()
        }
    }

    /// Admits `info`, or says why not.
    pub async fn admit(&self, info: &PluginInfo) -> Result<(), AdmissionError> {
        let found = Discovered::for_plugin(&self.client, info)
            .await
            .map_err(|source| AdmissionError::Discovery {
                plugin: info.label(),
                source,
            })?;
        if let Some(namespace) = &self.tenant {
            policy::admit_tenant(&self.policy, namespace, info, &found)?;
            tracing::info!(plugin = %info.name, version = %info.version, %namespace,
                "admitted as a tenant's plugin, confined to its namespace");
            return Ok(());
        }
        let admitted = policy::admit(&self.policy, info, &found)?;
        within_watched(info, admitted.grant(), self.watched.as_deref())?;
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

/// Refuses a plugin whose entry (`grant`) reaches beyond the one namespace a host restricted
/// to `watched` watches: a cluster-scoped parent, another namespace by name, or a namespace
/// selector. Related Secrets' data alone, or the watched namespace named, is servable.
pub fn within_watched(
    info: &PluginInfo,
    grant: Option<&Grant>,
    watched: Option<&str>,
) -> Result<(), AdmissionError> {
    let (Some(grant), Some(namespace)) = (grant, watched) else {
        return Ok(());
    };
    let beyond = grant.beyond(namespace);
    if beyond.is_empty() {
        return Ok(());
    }
    Err(AdmissionError::BeyondWatchedNamespace {
        plugin: info.label(),
        namespace: namespace.to_owned(),
        widened: beyond.join("; "),
    })
}

/// The directory source's loader: compiles a file, then admits the plugin it holds. It runs on
/// the loader's own thread, so it waits for discovery on the host's runtime.
#[derive(Clone)]
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

    fn load(&self, file: &Path, bytes: &[u8]) -> Result<Plugin, AdmissionError> {
        let plugin = self.inner.load(file, bytes)?;
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
            AdmissionError::Refused(_)
            | AdmissionError::Tenant(_)
            | AdmissionError::BeyondWatchedNamespace { .. } => "NotAdmitted",
            AdmissionError::Discovery { .. } => "DiscoveryFailed",
        }
    }
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
