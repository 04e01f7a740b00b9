//! The host's [`PluginSource`] started as a [`Source`]: a fixed list admitted here, the
//! directory's and the cluster's components admitted by their loader as they load.

use kube::Client;

use super::admission::{Admission, AdmittingLoader};
use super::config::{ManagerConfig, ManagerError, PluginSource};
use crate::fence::Fence;
use crate::hotload::{EngineLoader, HotloadMetrics, Source};
use crate::plugin::Plugin;

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
    let loader = |engine| AdmittingLoader {
        inner: EngineLoader {
            engine,
            limits: config.limits,
        },
        admission: admission.clone(),
        runtime: tokio::runtime::Handle::current(),
    };
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
            config: dir,
            engine,
        } => Source::directory(dir, loader(engine), metrics.clone())?,
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
