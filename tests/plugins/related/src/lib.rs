//! A plugin built on contract `weir:reconciler@0.2.0` for the host's related-object tests.
//!
//! A `Mirror` (`test.weir.dev/v1`) names a ConfigMap it does not own (`spec.source`) and a key
//! of it (`spec.key`); the plugin selects that ConfigMap by name and keeps one child ConfigMap
//! `<mirror>-copy` whose `value` is the source's key. Missing source (or key): no child,
//! `Ready=False` with reason `SourceNotFound`, and no requeue timer: the host reconciles the
//! Mirror again when the source appears or changes.
//!
//! For the refusal tests, `spec.sourceNamespace` reads the source in that namespace instead
//! (another namespace is refused) and `spec.alsoSecret` also selects a Secret, a kind the plugin
//! did not declare (refused).
//!
//! `spec.sourceCluster` reads the source in that member cluster (contract 0.4.0): the host
//! reads it there only if the policy grants the plugin the cluster and it is engaged.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use weir_guest_sdk::{Children, Condition, Error, Kind, Outcome, Reconciler, Selection};

/// Copy `key` of the ConfigMap `source` into `<name>-copy`.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "test.weir.dev",
    version = "v1",
    kind = "Mirror",
    namespaced,
    status = "MirrorStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct MirrorSpec {
    /// The ConfigMap to read, in the Mirror's namespace.
    pub source: String,
    /// The key to copy.
    pub key: String,
    /// Read the source in this namespace instead (refused unless it is the Mirror's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,
    /// Read the source in this member cluster instead of the Mirror's own (contract 0.4.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_cluster: Option<String>,
    /// Also select a Secret of this name (refused: Secrets are not declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub also_secret: Option<String>,
}

/// What the plugin reports.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MirrorStatus {
    /// The `metadata.generation` this status describes (set by the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` (from the plugin) and the host's own conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The plugin.
pub struct Mirrors;

impl Reconciler for Mirrors {
    type Parent = Mirror;
    const NAME: &'static str = "related";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn children() -> Vec<Kind> {
        vec![Kind::of::<ConfigMap>()]
    }

    fn related() -> Vec<Kind> {
        vec![Kind::of::<ConfigMap>()]
    }

    fn select(mirror: &Mirror) -> Result<Vec<Selection>, Error> {
        let mut source = Selection::name::<ConfigMap>(&mirror.spec.source);
        if let Some(ns) = &mirror.spec.source_namespace {
            source = source.in_namespace(ns);
        }
        if let Some(cluster) = &mirror.spec.source_cluster {
            source = source.in_cluster(cluster);
        }
        let mut selections = vec![source];
        if let Some(secret) = &mirror.spec.also_secret {
            selections.push(Selection::name::<Secret>(secret));
        }
        Ok(selections)
    }

    fn reconcile(mirror: &Mirror, observed: &Children) -> Result<Outcome, Error> {
        let related = match &mirror.spec.source_cluster {
            Some(cluster) => observed.related().in_cluster(cluster),
            None => observed.related(),
        };
        let source = related.get::<ConfigMap>(&mirror.spec.source)?;
        let value = source
            .as_ref()
            .and_then(|cm| cm.data.as_ref())
            .and_then(|data| data.get(&mirror.spec.key))
            .cloned();
        let Some(value) = value else {
            let message = match source {
                None => format!("ConfigMap {:?} does not exist", mirror.spec.source),
                Some(_) => format!(
                    "ConfigMap {:?} has no key {:?}",
                    mirror.spec.source, mirror.spec.key
                ),
            };
            let status = MirrorStatus {
                conditions: vec![Condition::new("Ready", false, "SourceNotFound", message)],
                ..MirrorStatus::default()
            };
            return Ok(Outcome::apply(vec![]).status(status));
        };
        let mut copy = ConfigMap::default();
        copy.metadata.name = Some(format!("{}-copy", mirror.name_any()));
        copy.data = Some(BTreeMap::from([("value".to_owned(), value)]));
        let status = MirrorStatus {
            conditions: vec![Condition::new("Ready", true, "Copied", "the key is copied")],
            ..MirrorStatus::default()
        };
        Ok(Outcome::apply(vec![copy.into()]).status(status))
    }
}

weir_guest_sdk::export!(Mirrors);

#[cfg(test)]
mod tests {
    use serde_json::json;
    use weir_guest_sdk::testing;

    use super::*;

    fn mirror(spec: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "test.weir.dev/v1", "kind": "Mirror",
               "metadata": {"name": "m", "namespace": "ns"}, "spec": spec})
    }

    fn source(value: &str) -> weir_guest_sdk::Child {
        weir_guest_sdk::Child::json(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "src", "namespace": "ns"}, "data": {"k": value}}))
    }

    #[test]
    fn it_selects_the_source_by_name_and_copies_its_key() {
        let parent = mirror(json!({"source": "src", "key": "k"}));
        let selected = testing::select::<Mirrors>(&parent).unwrap();
        assert_eq!(selected, vec![Selection::name::<ConfigMap>("src")]);
        let out = testing::reconcile_with_related::<Mirrors>(&parent, vec![], vec![source("v1")])
            .unwrap();
        let copy = out.children.get::<ConfigMap>("m-copy").unwrap().unwrap();
        assert_eq!(copy.data.unwrap()["value"], "v1");
    }

    #[test]
    fn a_source_in_a_member_cluster_is_selected_and_read_there() {
        let parent = mirror(json!({"source": "src", "key": "k", "sourceCluster": "member-a"}));
        let selected = testing::select::<Mirrors>(&parent).unwrap();
        assert_eq!(
            selected,
            vec![Selection::name::<ConfigMap>("src").in_cluster("member-a")]
        );
        let related = vec![source("home"), source("there").in_cluster("member-a")];
        let out = testing::reconcile_with_related::<Mirrors>(&parent, vec![], related).unwrap();
        let copy = out.children.get::<ConfigMap>("m-copy").unwrap().unwrap();
        assert_eq!(copy.data.unwrap()["value"], "there");
    }

    #[test]
    fn a_missing_source_is_not_ready_and_sets_no_timer() {
        let parent = mirror(json!({"source": "src", "key": "k"}));
        let out = testing::reconcile::<Mirrors>(&parent, vec![]).unwrap();
        assert!(out.children.is_empty());
        assert_eq!(out.requeue, weir_guest_sdk::Requeue::Done);
        let status = out.status.unwrap();
        assert_eq!(status["conditions"][0]["reason"], "SourceNotFound");
    }
}
