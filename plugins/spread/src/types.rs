//! The Spread custom resource: the image to run, how many replicas, and in which clusters.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A workload run the same way in several clusters.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "weir.dev",
    version = "v1alpha1",
    kind = "Spread",
    plural = "spreads",
    namespaced,
    status = "SpreadStatus",
    doc = "A workload run as one Deployment in each of several clusters.",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.ready"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct SpreadSpec {
    /// The container image.
    #[schemars(length(min = 1))]
    pub image: String,
    /// Replicas in each cluster.
    #[serde(default = "one")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// The names of the clusters the workload runs in (as the host names them).
    #[schemars(length(min = 1))]
    pub clusters: Vec<String>,
}

fn one() -> i32 {
    1
}

/// What the Spread shows: each cluster's ready replicas, and how many clusters are ready.
///
/// No field is required: the host writes its conditions alone when an answer is refused or a
/// call fails, before the plugin's own status was ever written. The schema declares the
/// host's fields (`observedGeneration`, `conditions`), so the API server keeps them.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadStatus {
    /// One entry per cluster named, sorted by name.
    #[serde(default)]
    pub clusters: Vec<Placed>,
    /// `<clusters with every replica ready>/<clusters named>`.
    #[serde(default)]
    pub ready: String,
    /// The `metadata.generation` the host last reconciled (the host sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The host's `Ready` and `Reconciled` conditions (the host sets them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<weir_guest_sdk::Condition>,
}

/// One cluster's share of the workload.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placed {
    /// The cluster's name.
    pub cluster: String,
    /// The ready replicas of its Deployment (0 until it is observed).
    pub ready_replicas: i32,
}
