//! Which cluster a desired child may name (contract 0.4.0): one the host has engaged.
//!
//! A child naming no cluster belongs in its parent's. A child naming another is accepted only
//! when the live objects the answer is judged among span that cluster
//! ([`LiveObjects::engaged`]) and a child can be written there ([`LiveObjects::writes_to`]).
//! The controller engages the member clusters of `weir run --clusters` but writes to its own
//! cluster only, so an answer placing a child in a member is refused, whole, for that
//! reconcile, saying so; one naming a cluster not engaged at all is refused saying that.

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
        if !live.engaged(cluster) {
            Some((i, cluster, false))
        } else if !live.writes_to(cluster) {
            Some((i, cluster, true))
        } else {
            None
        }
    });
    let Some((index, cluster, engaged)) = refused else {
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
    let key = format!("{namespace}/{name}");
    let cluster = cluster.to_owned();
    Err(if engaged {
        Refusal::UnwrittenCluster {
            plugin,
            kind,
            key,
            cluster,
        }
    } else {
        Refusal::UnknownCluster {
            plugin,
            kind,
            key,
            cluster,
        }
    })
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
