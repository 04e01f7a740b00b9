//! The Blog custom resource: its spec, its status, and so its CRD.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use weir_guest_sdk::Condition;

/// The image that serves the page when `spec.image` is not set.
pub const DEFAULT_IMAGE: &str = "nginx:1.27";

/// What a Blog should be: its title and how many pods of which image serve it.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "weir.dev",
    version = "v1alpha1",
    kind = "Blog",
    plural = "blogs",
    namespaced,
    status = "BlogStatus",
    doc = "A one-page website: a title served by a few web server replicas.",
    printcolumn = r#"{"name":"Title","type":"string","jsonPath":".spec.title"}"#,
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BlogSpec {
    /// The page title, shown as the page's heading.
    #[schemars(length(min = 1))]
    pub title: String,
    /// How many web server pods serve the page.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// The web server image; it must serve `/usr/share/nginx/html` on port 80.
    #[serde(default = "default_image")]
    #[schemars(length(min = 1))]
    pub image: String,
}

fn default_replicas() -> i32 {
    1
}

fn default_image() -> String {
    DEFAULT_IMAGE.to_owned()
}

/// What the Blog plugin last saw of its Blog.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlogStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pods of the Blog's Deployment that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// `Ready` (from the plugin) and the host's own conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
