//! The {{Kind}} plugin: one ConfigMap per {{Kind}}, holding its message, and a Ready condition.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use weir_guest_sdk::{Children, Condition, Error, Kind, Outcome, Reconciler};

/// What a {{Kind}} asks for. Its CRD is generated from this type, and `describe` reports it.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "{{group}}",
    version = "v1alpha1",
    kind = "{{Kind}}",
    plural = "{{plural}}",
    namespaced,
    status = "{{Kind}}Status"
)]
pub struct {{Kind}}Spec {
    /// The text the ConfigMap holds.
    pub message: String,
}

/// What the plugin last saw of its {{Kind}}.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct {{Kind}}Status {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`, and the host's own conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The reconciler: a pure function of the {{Kind}} (the host does every API call).
pub struct Plugin;

impl Reconciler for Plugin {
    type Parent = {{Kind}};
    const NAME: &'static str = "{{name}}";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn children() -> Vec<Kind> {
        vec![Kind::of::<ConfigMap>()]
    }

    fn reconcile(parent: &{{Kind}}, _observed: &Children) -> Result<Outcome, Error> {
        let name = parent.name_any();
        // Children land in the parent's cluster; `Child::from(config).in_cluster("name")` would
        // place one in another cluster the host has engaged (contract 0.4.0).
        let mut config = ConfigMap::default();
        config.metadata.name = Some(name.clone());
        config.data = Some([("message".to_owned(), parent.spec.message.clone())].into());
        let status = {{Kind}}Status {
            observed_generation: parent.metadata.generation,
            conditions: vec![Condition::new(
                "Ready",
                true,
                "ConfigMapApplied",
                format!("ConfigMap {name} holds the message"),
            )],
        };
        Ok(Outcome::apply(vec![config.into()]).status(status))
    }
}

weir_guest_sdk::export!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_map_holds_the_message() {
        let parent = {{Kind}}::new("hello", {{Kind}}Spec { message: "hi".into() });
        let out = weir_guest_sdk::testing::reconcile::<Plugin>(&parent, vec![]).unwrap();
        let config = out.children.get::<ConfigMap>("hello").unwrap().unwrap();
        assert_eq!(config.data.unwrap()["message"], "hi");
    }
}
