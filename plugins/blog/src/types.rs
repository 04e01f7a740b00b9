//! The Blog custom resource: its spec, its status, and so its CRD.

use std::collections::BTreeMap;

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
    /// A ConfigMap in the Blog's namespace whose `style.css` is inlined in the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Selects the ConfigMaps (in the Blog's namespace) whose `title` and `body` are the page's posts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub posts_selector: Option<PostsSelector>,
}

/// A Kubernetes label selector: every pair and every requirement must hold.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostsSelector {
    /// Labels that must be set to exactly these values.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// Further requirements on labels.
    #[serde(default)]
    pub match_expressions: Vec<LabelRequirement>,
}

/// One requirement of a label selector.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct LabelRequirement {
    /// The label key.
    pub key: String,
    /// How the label's value is compared.
    pub operator: LabelOperator,
    /// The values for `In` and `NotIn`; empty for `Exists` and `DoesNotExist`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// The operators of a label requirement, as Kubernetes spells them.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum LabelOperator {
    /// The label is set to one of the values.
    In,
    /// The label is not set, or set to none of the values.
    NotIn,
    /// The label is set.
    Exists,
    /// The label is not set.
    DoesNotExist,
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
