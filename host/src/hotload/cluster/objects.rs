//! Which plugin objects a cluster source follows: every `Plugin` of the cluster, or the
//! `TenantPlugin`s of one namespace; either way each is handled as a [`PluginResource`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use crate::cluster::fetch::FetchError;
use crate::cluster::tenant_plugin::beyond_namespace;
use crate::cluster::{PluginResource, PluginSpec, PluginStatus, TenantPluginResource};
use crate::runtime::{Cap, Fill, Stores};

/// The objects a cluster source follows, and where their statuses are written.
pub(super) enum Objects {
    /// Every `Plugin` (cluster-scoped).
    Cluster(Api<PluginResource>),
    /// The `TenantPlugin`s of one namespace.
    Tenant {
        /// The namespace.
        namespace: String,
        /// TenantPlugins in it.
        api: Api<TenantPluginResource>,
        /// The cap on the tenant's cache (its `maxCachedObjects`), which each TenantPlugin's
        /// `CacheLimited` condition follows; `None`: no cap, no condition.
        cap: Option<Arc<Cap>>,
    },
}

/// The events of a watch of plugin objects.
pub(super) type Watch = BoxStream<'static, Result<watcher::Event<PluginResource>, watcher::Error>>;

impl Objects {
    /// Watches the objects, retrying with kube's default backoff.
    pub(super) fn watch(&self) -> Watch {
        let config = watcher::Config::default();
        match self {
            Objects::Cluster(api) => watcher(api.clone(), config).default_backoff().boxed(),
            Objects::Tenant { api, .. } => watcher(api.clone(), config)
                .default_backoff()
                .map(|event| event.map(as_plugin))
                .boxed(),
        }
    }

    /// Writes `status` to `object` unless it has it already (`crate::cluster::status::write`).
    pub(super) async fn write_status(
        &self,
        object: &PluginResource,
        status: &PluginStatus,
    ) -> Result<bool, kube::Error> {
        use crate::cluster::status::write;
        match self {
            Objects::Cluster(api) => write(api, object, status).await,
            Objects::Tenant { api, .. } => write(api, object, status).await,
        }
    }

    /// What the tenant's capped cache holds now (`None`: Plugins, or a tenant with no cap).
    pub(super) fn fill(&self) -> Option<Fill> {
        match self {
            Objects::Tenant { cap: Some(cap), .. } => Some(cap.fill()),
            _ => None,
        }
    }

    /// What wakes when [`Objects::fill`] may say something else (`None`: it never does).
    pub(super) fn fill_changes(&self) -> Option<watch::Receiver<Stores>> {
        match self {
            Objects::Tenant { cap: Some(cap), .. } => Some(cap.fill_changes()),
            _ => None,
        }
    }

    /// How events and the catalog name an object: `Plugin/NAME`, `TenantPlugin/NAMESPACE/NAME`.
    pub(super) fn file_of(&self, name: &str) -> PathBuf {
        match self {
            Objects::Cluster(_) => Path::new("Plugin").join(name),
            Objects::Tenant { namespace, .. } => {
                Path::new("TenantPlugin").join(namespace).join(name)
            }
        }
    }

    /// Refuses a spec that names an object the source may not read for it: a TenantPlugin's
    /// pull Secret or ConfigMap in another namespace than its own.
    pub(super) fn confine(&self, spec: &PluginSpec) -> Result<(), FetchError> {
        let Objects::Tenant { namespace, .. } = self else {
            return Ok(());
        };
        let beyond = beyond_namespace(spec, namespace);
        if beyond.is_empty() {
            return Ok(());
        }
        Err(FetchError::OutsideNamespace {
            namespace: namespace.clone(),
            beyond: beyond.join("; "),
        })
    }
}

/// A TenantPlugin's watch event as a Plugin's.
fn as_plugin(event: watcher::Event<TenantPluginResource>) -> watcher::Event<PluginResource> {
    match event {
        watcher::Event::Apply(o) => watcher::Event::Apply(o.into()),
        watcher::Event::Delete(o) => watcher::Event::Delete(o.into()),
        watcher::Event::InitApply(o) => watcher::Event::InitApply(o.into()),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}
