//! The Spread reconciler (contract 0.4.0): one Deployment per cluster the Spread names, and a status that says which are ready.
//!
//! A Spread lives in one cluster (the hub) and names the clusters its workload runs in. Each
//! named cluster gets the same Deployment, named after the Spread, in the Spread's namespace;
//! a cluster the Spread stops naming loses its Deployment (the host prunes every child the
//! answer leaves out). The status reads each cluster's observed Deployment. `README.md`
//! specifies it and `fixtures/` pins it.

mod manifests;
mod types;

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use weir_guest_sdk::{Child, Children, Error, Kind, Outcome, Reconciler};

pub use manifests::deployment;
pub use types::{Placed, Spread, SpreadSpec, SpreadStatus};

/// Reconciles Spreads.
pub struct SpreadReconciler;

impl Reconciler for SpreadReconciler {
    type Parent = Spread;
    const NAME: &'static str = "spread";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn children() -> Vec<Kind> {
        vec![Kind::of::<Deployment>()]
    }

    fn reconcile(spread: &Spread, observed: &Children) -> Result<Outcome, Error> {
        let clusters = clusters(&spread.spec)?;
        let name = spread.name_any();
        let children: Vec<Child> = clusters
            .iter()
            .map(|cluster| Child::from(deployment(spread)).in_cluster(*cluster))
            .collect();
        let mut placed = Vec::with_capacity(clusters.len());
        for cluster in &clusters {
            let live = observed.in_cluster(cluster).get::<Deployment>(&name)?;
            let ready = live
                .and_then(|d| d.status)
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0);
            placed.push(Placed {
                cluster: (*cluster).to_owned(),
                ready_replicas: ready,
            });
        }
        let ready = placed
            .iter()
            .filter(|p| p.ready_replicas >= spread.spec.replicas)
            .count();
        let status = SpreadStatus {
            clusters: placed,
            ready: format!("{ready}/{}", clusters.len()),
            ..SpreadStatus::default()
        };
        Ok(Outcome::apply(children).status(status))
    }
}

/// The clusters the Spread names, each once, sorted; none is a permanent error.
fn clusters(spec: &SpreadSpec) -> Result<BTreeSet<&str>, Error> {
    if spec.replicas < 0 {
        return Err(Error::permanent(format!(
            "spec.replicas must not be negative, got {}",
            spec.replicas
        )));
    }
    let clusters: BTreeSet<&str> = spec.clusters.iter().map(String::as_str).collect();
    if clusters.is_empty() || clusters.contains("") {
        return Err(Error::permanent(
            "spec.clusters must name at least one cluster, and no empty name",
        ));
    }
    Ok(clusters)
}

weir_guest_sdk::export!(SpreadReconciler);

#[cfg(test)]
mod tests;
