//! TenantPlugins in a namespace the policy gives no tenant: never fetched or loaded, each
//! refused in its status (`Loaded=False`, reason `NotATenant`) and the log, so the team that
//! created one reads why nothing serves it.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use tokio_util::sync::CancellationToken;

use crate::chain::Chain;
use crate::cluster::fetch::TagCheck;
use crate::cluster::status::{self, Attempt, Checks};
use crate::cluster::{PluginResource, TenantPluginResource};
use crate::fence::Fence;
use crate::policy::TenantRefusal;

/// The reason a stray TenantPlugin's `Loaded` condition gives.
pub const NOT_A_TENANT: &str = "NotATenant";

/// Watches every TenantPlugin through `client` until `stop`, and refuses those outside
/// `tenants` (the policy's tenant namespaces) in their status, written through `writes` while
/// `leading` allows.
pub async fn refuse_strays(
    (client, writes): (Client, Client),
    tenants: BTreeSet<String>,
    leading: Fence,
    stop: CancellationToken,
) {
    let api = Api::<TenantPluginResource>::all(client);
    let mut objects = watcher(api, watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    // Each stray's generation already refused and logged, by namespace and name.
    let mut refused: BTreeMap<(String, String), Option<i64>> = BTreeMap::new();
    loop {
        let object = tokio::select! {
            () = stop.cancelled() => return,
            object = objects.next() => match object {
                None => return,
                Some(Err(e)) => {
                    tracing::warn!(error = %Chain(&e), "watching TenantPlugins failed; retrying");
                    continue;
                }
                Some(Ok(object)) => object,
            },
        };
        let namespace = object.namespace().unwrap_or_default();
        if tenants.contains(&namespace) {
            continue;
        }
        let key = (namespace.clone(), object.name_any());
        let generation = object.metadata.generation;
        if refused.get(&key) == Some(&generation) {
            continue;
        }
        let why = TenantRefusal::NotATenant {
            namespace: namespace.clone(),
        };
        tracing::warn!(tenantplugin = %key.1, %namespace, "refused: {why}");
        if !leading.allows() {
            continue;
        }
        let plugin = PluginResource::from(object);
        let desired = status::desired(
            generation,
            None,
            &Attempt::Refused {
                reason: NOT_A_TENANT,
                message: why.to_string(),
            },
            Checks {
                tag: &TagCheck::NotAsked,
                signature: None,
                candidate: None,
                cache: None,
            },
            plugin.status.as_ref(),
        );
        let api = Api::<TenantPluginResource>::namespaced(writes.clone(), &namespace);
        match status::write(&api, &plugin, &desired).await {
            Ok(_) => {
                refused.insert(key, generation);
            }
            Err(e) => {
                tracing::warn!(tenantplugin = %key.1, %namespace, error = %Chain(&e), "cannot write the TenantPlugin's status");
            }
        }
    }
}
