//! The member clusters' runnable: started from the directory `--clusters` names, or the Secrets `--cluster-secrets` selects, if any.
//!
//! The handle they are engaged in (`crate::clusters::Engaged`) is made with the controllers'
//! configuration and shared by the controllers, `/metrics` and `Manager::clusters`; this module
//! only starts the source's watch and adds the runnable that engages and releases them.

use super::ManagerConfig;
use super::config::ManagerError;
use super::runnables::{Runnables, Stage};
use crate::clusters::Watched;
use crate::hotload::Catalog;
use crate::plugin::ResourceKind;

/// The member kubeconfigs, watched from now on (`None` without `--clusters` or
/// `--cluster-secrets`); the Secrets are read through `client`.
/// Until its first scan, no member counts as settled: a parent being deleted keeps its
/// children in members until they are known (`Engaged::settled`).
pub(super) fn watch(
    config: &ManagerConfig,
    client: &kube::Client,
) -> Result<Option<Watched>, ManagerError> {
    match config.clusters.clone() {
        Some(members) => {
            let watched = Watched::start(members, client)?;
            config.controller.clusters.expect_source();
            Ok(Some(watched))
        }
        None => Ok(None),
    }
}

/// Adds the runnable that engages the members `watched` finds, each watching the child kinds
/// of the plugins `catalog` serves at the time.
pub(super) fn serve(
    watched: Option<Watched>,
    runnables: &mut Runnables,
    catalog: &Catalog,
    config: &ManagerConfig,
) {
    let Some(watched) = watched else {
        return;
    };
    let (catalog, engaged) = (catalog.clone(), config.controller.clusters.clone());
    let namespace = config.controller.namespace.clone();
    runnables.always(Stage::Beside, "member clusters", move |stop| {
        watched.run(engaged, move || placed_kinds(&catalog), namespace, stop)
    });
}

/// The kinds the served plugins may place in a member cluster: their child kinds, each once.
fn placed_kinds(catalog: &Catalog) -> Vec<ResourceKind> {
    let mut kinds: Vec<ResourceKind> = Vec::new();
    for row in catalog.rows() {
        for kind in row.info.children {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    kinds
}
