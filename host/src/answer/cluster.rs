//! Which cluster a desired child may name (contract 0.4.0): one the host has engaged.
//!
//! A child naming no cluster belongs in its parent's. A child naming another is accepted only
//! when the live objects the answer is judged among span that cluster
//! ([`LiveObjects::engaged`]): the controller spans its own cluster and the member clusters
//! engaged now (`weir run --clusters`), a fixture the clusters it names. An answer naming a
//! cluster not engaged is refused, whole, for that reconcile, saying so; nothing is written
//! in any cluster, and never in the host's own instead.
//!
//! An accepted child placed in a member cluster is judged there as everywhere: by that
//! member's live object of the same name, which it may only write if this parent's mark is on
//! it (`super::marks`: the member's API server cannot hold an owner reference to a parent it
//! does not know). The judge stamps the mark in place of the owner reference; the controller
//! writes the child through the member's own client (`crate::reconcile::members`).

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
    let refused = clusters.iter().enumerate().find_map(|(i, cluster)| {
        let cluster = cluster.as_deref()?;
        (!live.engaged(cluster)).then_some((i, cluster))
    });
    let Some((index, cluster)) = refused else {
        return Ok(());
    };
    let child = desired.get(index).unwrap_or(&Value::Null);
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let namespace = text(&child["metadata"]["namespace"])
        .or_else(|| parent.metadata.namespace.clone())
        .unwrap_or_default();
    let name = text(&child["metadata"]["name"]).unwrap_or_default();
    let plugin = info.label();
    let kind = text(&child["kind"]).unwrap_or_else(|| format!("#{index}"));
    Err(Refusal::UnknownCluster {
        plugin,
        kind,
        key: format!("{namespace}/{name}"),
        cluster: cluster.to_owned(),
    })
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
