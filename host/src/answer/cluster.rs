//! Which cluster a desired child may name (contract 0.4.0): one the policy grants its plugin, and the host has engaged.
//!
//! A child naming no cluster belongs in its parent's. A child naming another is accepted only
//! when the operator's policy grants the plugin that cluster (its `plugins:` entry's
//! `clusters` by name or `clusterSelector` by the cluster's labels,
//! [`super::Grant::allows_cluster`]: a member's credentials are lent to the plugins the
//! policy names, not to every plugin the host serves), and the live objects the answer is
//! judged among span that cluster
//! ([`LiveObjects::engaged`]): the controller spans its own cluster and the member clusters
//! engaged now (`weir run --clusters`), a fixture the clusters it names. An answer naming a
//! cluster not engaged is refused, whole, for that reconcile, saying so; nothing is written
//! in any cluster, and never in the host's own instead. Unless the parent records that cluster
//! as one it has children in ([`super::MEMBER_CLUSTERS_ANNOTATION`]): a member released for
//! now (its kubeconfig removed, to come back) is accepted here, and the writer names it while
//! the children in the other clusters keep converging.
//!
//! An accepted child placed in a member cluster is judged there as everywhere: by that
//! member's live object of the same name, which it may only write if this parent's mark is on
//! it (`super::marks`: the member's API server cannot hold an owner reference to a parent it
//! does not know). The judge stamps the mark in place of the owner reference; the controller
//! writes the child through the member's own client (`crate::reconcile::members`).

use kube::api::DynamicObject;
use serde_json::Value;

use super::live::LiveObjects;
use super::marks::recorded_clusters;
use super::policy::ValidationPolicy;
use super::refusal::Refusal;
use crate::plugin::PluginInfo;

/// Refuses the answer if a child of `desired` names (in `clusters`, in the same order) a
/// member cluster that `policy` does not grant the plugin, or that `live` does not span.
pub(super) fn check(
    info: &PluginInfo,
    parent: &DynamicObject,
    (desired, clusters): (&[Value], &[Option<String>]),
    live: &dyn LiveObjects,
    policy: &ValidationPolicy,
) -> Result<(), Refusal> {
    let grant = policy.grant(&info.name);
    let refused = clusters.iter().enumerate().find_map(|(i, cluster)| {
        let cluster = cluster.as_deref()?;
        let home = cluster == live.parent_cluster();
        let engaged = live.engaged(cluster);
        // An engaged member without a source of labels (a fixture's) has none.
        let labels = engaged.then(|| live.cluster_labels(cluster).unwrap_or_default());
        let granted = home || grant.is_some_and(|g| g.may_allow_cluster(cluster, labels.as_ref()));
        // A member the parent already has children in, released for now, is not unknown: the
        // writer names it while the other clusters' children keep converging.
        // (The record is read only then: most answers name no member at all.)
        let known = engaged || recorded_clusters(parent).contains(cluster);
        (!granted || !known).then_some((i, cluster, granted))
    });
    let Some((index, cluster, granted)) = refused else {
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
    if !granted {
        let granted = grant.map_or_else(|| "none".to_owned(), |g| g.clusters_said());
        return Err(Refusal::ClusterNotGranted {
            plugin,
            kind,
            key: format!("{namespace}/{name}"),
            cluster: cluster.to_owned(),
            granted,
        });
    }
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
