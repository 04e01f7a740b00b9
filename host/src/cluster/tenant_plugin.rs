//! The `TenantPlugin` custom resource: a team's own plugin, in the team's namespace.
//!
//! ```yaml
//! apiVersion: weir.dev/v1alpha1
//! kind: TenantPlugin
//! metadata: {name: blog, namespace: team-a}
//! spec:
//!   source: {oci: registry.example/team-a/blog:1.0}
//!   digest: sha256:4f1c…
//!   pullSecret: {namespace: team-a, name: regcred}   # only in the TenantPlugin's namespace
//! ```
//!
//! Its spec and status are a [`PluginSpec`] and a [`PluginStatus`], as a `Plugin`'s (beside it
//! as Kubewarden's namespaced `AdmissionPolicy` sits beside `ClusterAdmissionPolicy`); it is
//! namespaced, so RBAC decides which team may create one where. What it may serve is the
//! cluster admin's policy's call (`tenants:`, `crate::policy::Tenant`), and what it names must
//! be in its own namespace: a pull Secret or a ConfigMap elsewhere is refused.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::resource::{PluginResource, PluginSpec, PluginStatus};

/// A team's reconciler plugin for the Weir host, served in the TenantPlugin's namespace only.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "weir.dev",
    version = "v1alpha1",
    kind = "TenantPlugin",
    root = "TenantPluginResource",
    plural = "tenantplugins",
    namespaced,
    status = "PluginStatus",
    doc = "A team's reconciler plugin for the Weir host, served in its own namespace only: a WebAssembly component in an OCI registry or a ConfigMap of the namespace, pinned by digest.",
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".status.kind"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Digest","type":"string","jsonPath":".status.shortDigest"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct TenantPluginSpec {
    /// What a `Plugin`'s spec says, with every namespace it names being the TenantPlugin's own.
    #[serde(flatten)]
    pub plugin: PluginSpec,
}

impl From<TenantPluginResource> for PluginResource {
    /// The TenantPlugin as the cluster source handles every plugin object: its metadata (with
    /// its namespace), spec and status.
    fn from(tenant: TenantPluginResource) -> Self {
        PluginResource {
            metadata: tenant.metadata,
            spec: tenant.spec.plugin,
            status: tenant.status,
        }
    }
}

/// The namespaces `spec` names other than `namespace` (a pull Secret's, a ConfigMap's, the
/// candidate's ConfigMap's), each as `what namespace`: a TenantPlugin may name none.
pub fn beyond_namespace(spec: &PluginSpec, namespace: &str) -> Vec<String> {
    let named = [
        (
            "pullSecret",
            spec.pull_secret.as_ref().map(|s| &s.namespace),
        ),
        (
            "source.configMap",
            spec.source.config_map.as_ref().map(|c| &c.namespace),
        ),
        (
            "candidate.configMap",
            spec.candidate
                .as_ref()
                .and_then(|c| c.config_map.as_ref())
                .map(|c| &c.namespace),
        ),
    ];
    named
        .into_iter()
        .filter_map(|(what, ns)| {
            ns.filter(|ns| *ns != namespace)
                .map(|ns| format!("{what} {ns}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use kube::CustomResourceExt;

    use super::*;
    use crate::cluster::{ComponentSource, ConfigMapKey, ObjectReference};

    const REGENERATE: &str = "WEIR_BLESS=1 cargo test -p weir --lib cluster::tenant_plugin";

    #[test]
    fn the_checked_in_crd_matches_the_rust_type() {
        let yaml = crate::yaml::to_string(&TenantPluginResource::crd()).unwrap();
        let want = format!(
            "# Generated from host/src/cluster/tenant_plugin.rs; do not edit. Regenerate: {REGENERATE}\n{yaml}"
        );
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/crd/tenantplugin.yaml");
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
    fn the_crd_is_namespaced_with_the_plugins_spec() {
        let crd = serde_json::to_value(TenantPluginResource::crd()).unwrap();
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        assert_eq!(crd["spec"]["names"]["kind"], "TenantPlugin");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["subresources"]["status"], serde_json::json!({}));
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        for field in ["source", "digest", "pullSecret", "candidate"] {
            assert!(spec["properties"].get(field).is_some(), "{field}: {spec}");
        }
        assert_eq!(spec["required"], serde_json::json!(["source"]));
    }

    #[test]
    fn a_tenant_plugin_reads_from_yaml_and_is_handled_as_a_plugin() {
        let tenant: TenantPluginResource = crate::yaml::from_str(
            "apiVersion: weir.dev/v1alpha1\nkind: TenantPlugin\nmetadata: {name: blog, namespace: team-a}\n\
             spec:\n  source: {oci: 'localhost:5000/team-a/blog:1.0'}\n",
        )
        .unwrap();
        let plugin = PluginResource::from(tenant);
        assert_eq!(plugin.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(
            plugin.spec.source.oci.as_deref(),
            Some("localhost:5000/team-a/blog:1.0")
        );
    }

    #[test]
    fn a_spec_naming_another_namespace_is_beyond_it() {
        let mut spec = PluginSpec {
            source: ComponentSource {
                oci: None,
                config_map: Some(ConfigMapKey {
                    namespace: "team-a".into(),
                    name: "blog".into(),
                    key: "blog.wasm".into(),
                }),
            },
            digest: None,
            pull_secret: None,
            candidate: None,
        };
        assert!(beyond_namespace(&spec, "team-a").is_empty());
        spec.pull_secret = Some(ObjectReference {
            namespace: "weir".into(),
            name: "regcred".into(),
        });
        assert_eq!(beyond_namespace(&spec, "team-a"), ["pullSecret weir"]);
        assert_eq!(
            beyond_namespace(&spec, "team-b"),
            ["pullSecret weir", "source.configMap team-a"]
        );
    }
}
