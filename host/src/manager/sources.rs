//! The host's [`PluginSource`] started as a [`Source`]: a fixed list admitted here, the
//! directory's and the cluster's components admitted by their loader as they load; beside the
//! cluster's, one source per tenant namespace of the policy ([`tenants`]).

use std::sync::Arc;

use kube::Client;

use super::admission::{Admission, AdmittingLoader};
use super::config::{ManagerConfig, ManagerError, PluginSource};
use crate::fence::Fence;
use crate::hotload::{EngineLoader, HotloadMetrics, Source};
use crate::plugin::{Engine, Plugin};
use crate::runtime::Cap;

/// A tenant namespace's TenantPlugins' source, and the cap on its cache (its entry's
/// `maxCachedObjects`), one for both: the tenant's informers count against it, and the source
/// says on each TenantPlugin whether the tenant is at it.
pub(super) struct TenantSource {
    /// The tenant namespace.
    pub(super) namespace: String,
    /// Its TenantPlugins.
    pub(super) source: Source<Plugin>,
    /// The cap on its cache; `None`: no cap.
    pub(super) cap: Option<Arc<Cap>>,
}

/// Starts `source`. A fixed list is admitted here, and a refusal stops the host's start; the
/// loaders admit each component as they load it, with `limits` on its calls. The cluster source
/// writes (its `Plugin` statuses) through `client`, built by the leader's `gate`.
pub(super) async fn start(
    source: PluginSource,
    admission: Admission,
    config: &ManagerConfig,
    client: &Client,
    gate: &Fence,
    metrics: &HotloadMetrics,
) -> Result<Source<Plugin>, ManagerError> {
    let loader = |engine| admitting(engine, admission.clone(), config);
    Ok(match source {
        PluginSource::Fixed(plugins) => {
            for plugin in &plugins {
                admission
                    .admit(plugin.info())
                    .await
                    .map_err(|source| ManagerError::Admission {
                        plugin: plugin.label().to_owned(),
                        source: Box::new(source),
                    })?;
            }
            Source::fixed(plugins)
        }
        PluginSource::Directory {
            config: mut dir,
            engine,
        } => {
            // The directory's files are held to the same policy, at its `level.directory`.
            dir.verification.clone_from(&config.verification);
            Source::directory(dir, loader(engine), metrics.clone())?
        }
        PluginSource::Cluster {
            config: mut cluster,
            engine,
        } => {
            // The host's verification policy is the one the cluster source checks.
            cluster.verification.clone_from(&config.verification);
            Source::cluster(
                client.clone(),
                cluster,
                gate.clone(),
                loader(engine),
                metrics.clone(),
            )?
        }
    })
}

/// Loads with `engine` under the host's limits, then admits with `admission`.
fn admitting(engine: Engine, admission: Admission, config: &ManagerConfig) -> AdmittingLoader {
    AdmittingLoader {
        inner: EngineLoader {
            engine,
            limits: config.limits,
        },
        admission,
        runtime: tokio::runtime::Handle::current(),
    }
}

/// With the cluster source, one source per namespace of the policy's `tenants:` map: that
/// namespace's TenantPlugins, admitted as its own (`crate::policy::admit_tenant`), stored and
/// verified as the Plugins are, with the cap on its cache if its entry sets one. A tenant
/// namespace a host restricted to another one cannot watch is left out, with a warning. Other
/// sources serve no tenant.
pub(super) fn tenants(
    source: &PluginSource,
    admission: &Admission,
    config: &ManagerConfig,
    client: &Client,
    gate: &Fence,
    metrics: &HotloadMetrics,
) -> Result<Vec<TenantSource>, ManagerError> {
    let PluginSource::Cluster {
        config: cluster,
        engine,
    } = source
    else {
        return Ok(Vec::new());
    };
    let mut started = Vec::new();
    for (namespace, tenant) in &config.policy.tenants {
        let watched = config.controller.namespace.as_deref();
        if watched.is_some_and(|w| w != namespace.as_str()) {
            tracing::warn!(%namespace, ?watched, "a host watching one namespace serves no other tenant's TenantPlugins");
            continue;
        }
        let mut cluster = cluster.clone();
        cluster.verification.clone_from(&config.verification);
        let loader = admitting(engine.clone(), admission.tenant(namespace), config);
        let cap =
            (tenant.max_cached_objects).map(|limit| Cap::new(format!("tenant {namespace}"), limit));
        let source = Source::tenant(
            client.clone(),
            namespace,
            cap.clone(),
            cluster,
            gate.clone(),
            loader,
            metrics.clone(),
        )?;
        started.push(TenantSource {
            namespace: namespace.clone(),
            source,
            cap,
        });
    }
    Ok(started)
}
