//! Which cluster a desired child may name (contract 0.4.0): one the host has engaged.
//!
//! A child naming no cluster belongs in its parent's. A child naming another is accepted only
//! when the live objects the answer is judged among span that cluster
//! ([`LiveObjects::engaged`]): the controller's cache is the host's own cluster alone until the
//! host engages others, so today such an answer is refused, whole, for that reconcile.

use kube::api::DynamicObject;
use serde_json::Value;

use super::live::LiveObjects;
use super::refusal::Refusal;
use crate::plugin::PluginInfo;

/// Refuses the answer if a child of `desired` names (in `clusters`, in the same order) a
/// cluster that `live` does not span.
pub(super) fn check(
    info: &PluginInfo,
    parent: &DynamicObject,
    desired: &[Value],
    clusters: &[Option<String>],
    live: &dyn LiveObjects,
) -> Result<(), Refusal> {
    let unknown = clusters.iter().enumerate().find_map(|(i, cluster)| {
        cluster
            .as_deref()
            .filter(|c| !live.engaged(c))
            .map(|c| (i, c))
    });
    let Some((index, cluster)) = unknown else {
        return Ok(());
    };
    let child = desired.get(index).unwrap_or(&Value::Null);
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let namespace = text(&child["metadata"]["namespace"])
        .or_else(|| parent.metadata.namespace.clone())
        .unwrap_or_default();
    let name = text(&child["metadata"]["name"]).unwrap_or_default();
    Err(Refusal::UnknownCluster {
        plugin: info.label(),
        kind: text(&child["kind"]).unwrap_or_else(|| format!("#{index}")),
        key: format!("{namespace}/{name}"),
        cluster: cluster.to_owned(),
    })
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
