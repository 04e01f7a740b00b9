//! The `Plugin` custom resource: which component the host should serve, and what became of it.
//!
//! ```yaml
//! apiVersion: weir.dev/v1alpha1
//! kind: Plugin
//! metadata: {name: blog}
//! spec:
//!   source: {oci: registry.example/weir/blog:1.0}
//!   digest: sha256:4f1c…          # optional: refuse any other content
//!   pullSecret: {namespace: weir, name: regcred}   # optional, kubernetes.io/dockerconfigjson
//!   candidate: {digest: sha256:9b2e…}              # optional: a new version to roll out
//! ```
//!
//! A `candidate` is another version of the same plugin, rolled out beside the one `source`
//! serves as the host's rollout settings say (shadow, canary steps, promoted or rolled back;
//! `weir rollout` steers it). It names its component as `source` does, or only by `digest`: then
//! it is that digest in `source.oci`'s repository.
//!
//! Cluster-scoped, like the CRDs its plugins serve. `kubectl get plugins` shows the kind, the
//! version and the digest served, and whether it is `Ready`.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A reconciler plugin for the Weir host: a WebAssembly component pulled from an OCI
/// registry (or read from a ConfigMap), pinned by digest, loaded and hot-swapped by the host.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "weir.dev",
    version = "v1alpha1",
    kind = "Plugin",
    root = "PluginResource",
    plural = "plugins",
    status = "PluginStatus",
    doc = "A reconciler plugin for the Weir host: a WebAssembly component in an OCI registry or a ConfigMap, pinned by digest.",
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".status.kind"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Digest","type":"string","jsonPath":".status.shortDigest"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PluginSpec {
    /// Where the component is: exactly one of `oci` and `configMap`.
    pub source: ComponentSource,
    /// Pins the content (`sha256:` and 64 hex digits): for `oci`, the artifact's manifest
    /// digest (what `weir push` prints); for `configMap`, the component's own sha256. Other
    /// content is refused, whatever the tag says; with `@sha256:` in `source.oci` they must agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub digest: Option<String>,
    /// A `kubernetes.io/dockerconfigjson` Secret holding the registry's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret: Option<ObjectReference>,
    /// A new version of the plugin to roll out beside the one `source` serves (shadowed,
    /// canaried, then promoted or rolled back; `weir rollout` steers it). Removing it
    /// withdraws the candidate; once promoted, point `source` at it and remove it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<CandidateSource>,
}

/// Where a Plugin's candidate version comes from.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CandidateSource {
    /// An OCI reference, as `source.oci`; without it (and without `configMap`), the
    /// candidate is `digest` in `source.oci`'s repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<String>,
    /// A key of a ConfigMap's `binaryData`, as `source.configMap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapKey>,
    /// Pins the candidate's content (`sha256:` and 64 hex digits), as `digest` does the
    /// serving version's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub digest: Option<String>,
}

impl CandidateSource {
    /// The source and the pin of the candidate of a Plugin whose serving source is `serving`;
    /// `None` when it names nothing to fetch (neither a source nor a digest with an OCI source).
    pub fn resolve(&self, serving: &ComponentSource) -> Option<(ComponentSource, Option<String>)> {
        if self.oci.is_some() || self.config_map.is_some() {
            let source = ComponentSource {
                oci: self.oci.clone(),
                config_map: self.config_map.clone(),
            };
            return Some((source, self.digest.clone()));
        }
        let digest = self.digest.clone()?;
        let repository = super::oci::parse_reference(serving.oci.as_deref()?).ok()?;
        let source = ComponentSource {
            oci: Some(repository.clone_with_digest(digest.clone()).whole()),
            config_map: None,
        };
        Some((source, Some(digest)))
    }
}

/// Where a Plugin's component comes from.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentSource {
    /// An OCI reference, `registry/repository:tag` or `registry/repository@sha256:…`, to an
    /// artifact in the WebAssembly layout (one `application/wasm` layer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<String>,
    /// A key of a ConfigMap's `binaryData` (small components only: a ConfigMap holds 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapKey>,
}

/// One key of one ConfigMap.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct ConfigMapKey {
    /// The ConfigMap's namespace.
    pub namespace: String,
    /// The ConfigMap's name.
    pub name: String,
    /// The key under `binaryData`.
    pub key: String,
}

/// A namespaced object, named from a cluster-scoped one.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct ObjectReference {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// What the host made of a Plugin.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The digest of the component served (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The first 12 hex digits of `digest`, for `kubectl get plugins`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_digest: Option<String>,
    /// The plugin's name, from its `describe()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The plugin's version, from its `describe()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The parent kind it reconciles (`Kind.group`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `Loaded` (the component was pulled, verified and compiled) and `Ready` (it serves its kind).
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Why the last pull or load failed, if it did; the previous component keeps serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// One entry of `status.conditions`, shaped like `metav1.Condition`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Loaded` or `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase word saying why, for machines.
    pub reason: String,
    /// A sentence saying why, for people.
    #[serde(default)]
    pub message: String,
    /// When `status` last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// The Plugin generation the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The part of a digest `kubectl get plugins` shows: 12 hex digits.
pub fn short_digest(digest: &str) -> String {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    hex.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use kube::CustomResourceExt;

    use super::*;

    const REGENERATE: &str = "WEIR_BLESS=1 cargo test -p weir --lib cluster::resource";

    fn checked_in() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/crd/plugin.yaml")
    }

    #[test]
    fn the_checked_in_crd_matches_the_rust_type() {
        let yaml = crate::yaml::to_string(&PluginResource::crd()).unwrap();
        let want = format!(
            "# Generated from host/src/cluster/resource.rs; do not edit. Regenerate: {REGENERATE}\n{yaml}"
        );
        let path = checked_in();
        if std::env::var_os("WEIR_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is stale or missing; regenerate it with\n    {REGENERATE}",
            path.display()
        );
    }

    #[test]
    fn the_crd_is_cluster_scoped_with_a_status_and_the_printer_columns() {
        let crd = serde_json::to_value(PluginResource::crd()).unwrap();
        assert_eq!(crd["spec"]["scope"], "Cluster");
        assert_eq!(crd["spec"]["names"]["plural"], "plugins");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["subresources"]["status"], serde_json::json!({}));
        let columns: Vec<&str> = version["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(columns, ["Kind", "Version", "Digest", "Ready", "Age"]);
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["required"], serde_json::json!(["source"]));
    }

    #[test]
    fn a_plugin_reads_from_yaml_as_written_in_the_docs() {
        let plugin: PluginResource = crate::yaml::from_str(
            "apiVersion: weir.dev/v1alpha1\nkind: Plugin\nmetadata: {name: blog}\nspec:\n  \
             source: {oci: 'localhost:5000/weir/blog:1.0'}\n  pullSecret: {namespace: weir, name: regcred}\n",
        )
        .unwrap();
        assert_eq!(
            plugin.spec.source.oci.as_deref(),
            Some("localhost:5000/weir/blog:1.0")
        );
        assert_eq!(plugin.spec.pull_secret.unwrap().name, "regcred");
        assert_eq!(short_digest("sha256:0123456789abcdef"), "0123456789ab");
    }

    #[test]
    fn a_candidate_named_by_digest_alone_is_that_digest_in_the_serving_repository() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let serving = ComponentSource {
            oci: Some("localhost:5000/weir/blog:1.0".into()),
            config_map: None,
        };
        let by_digest = CandidateSource {
            digest: Some(digest.clone()),
            ..CandidateSource::default()
        };
        let (source, pin) = by_digest.resolve(&serving).unwrap();
        assert_eq!(
            source.oci.as_deref(),
            Some(format!("localhost:5000/weir/blog@{digest}").as_str())
        );
        assert_eq!(pin, Some(digest.clone()));
        let elsewhere = CandidateSource {
            oci: Some("localhost:5000/weir/blog:2.0".into()),
            ..CandidateSource::default()
        };
        let (source, pin) = elsewhere.resolve(&serving).unwrap();
        assert_eq!(source.oci.as_deref(), Some("localhost:5000/weir/blog:2.0"));
        assert_eq!(pin, None);
        assert_eq!(CandidateSource::default().resolve(&serving), None);
        let from_config_map = ComponentSource {
            oci: None,
            config_map: Some(ConfigMapKey {
                namespace: "weir".into(),
                name: "blog".into(),
                key: "blog.wasm".into(),
            }),
        };
        assert_eq!(by_digest.resolve(&from_config_map), None);
    }
}
