//! What `weir rbac` grants a plugin the policy's entry widens, and that without the entry
//! the same plugin is refused as before.

use std::collections::BTreeMap;

use super::*;
use crate::clusters::Labels;
use crate::plugin::{LabelSelector, ResourceKind};
use crate::policy::Grant;

/// A propagator: a cluster-scoped parent of its own CRD writing ConfigMaps, reading
/// ConfigMaps and Namespaces.
fn propagator() -> PluginInfo {
    PluginInfo {
        name: "propagator".into(),
        version: "1".into(),
        parent: ResourceKind::of_v1("test.weir.dev", "Propagation", "propagations", false),
        children: vec![ResourceKind::of_v1("", "ConfigMap", "configmaps", true)],
        related: vec![
            ResourceKind::of_v1("", "ConfigMap", "configmaps", true),
            ResourceKind::of_v1("", "Namespace", "namespaces", false),
        ],
        finalizer: None,
        crd: Some(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: propagations.test.weir.dev\nspec:\n  group: test.weir.dev\n  names: {kind: Propagation, plural: propagations}\n  scope: Cluster\n  versions:\n  - {name: v1, served: true, storage: true}\n"
                .into(),
        ),
    }
}

fn widening() -> Policy {
    let grant = Grant {
        cluster_scoped_parent: true,
        namespace_selector: Some(LabelSelector {
            match_labels: BTreeMap::from([("team".into(), "a".into())]),
            match_expressions: vec![],
        }),
        ..Grant::default()
    };
    Policy {
        plugins: BTreeMap::from([("propagator".into(), grant)]),
        ..Policy::default()
    }
}

#[test]
fn a_widened_plugin_is_granted_its_cluster_scoped_parent_and_namespaces_with_a_warning_each() {
    let rendered = role_for("weir", &[propagator()], &widening(), false).unwrap();
    assert_eq!(
        rendered.warnings,
        [
            "plugin propagator@1 is widened by the policy's entry for it: cluster-scoped parent",
            "plugin propagator@1 is widened by the policy's entry for it: namespaces labelled team=a",
        ]
    );
    assert!(
        rendered
            .yaml
            .contains("# WARNING: plugin propagator@1 is widened")
    );
    let role: ClusterRole = crate::yaml::from_str(&rendered.yaml).unwrap();
    let rules: Vec<(String, Vec<String>)> = role
        .rules
        .iter()
        .flatten()
        .map(|r| {
            (
                r.api_groups.clone().unwrap()[0].clone(),
                r.resources.clone().unwrap(),
            )
        })
        .collect();
    assert!(rules.contains(&("test.weir.dev".into(), vec!["propagations".into()])));
    assert!(
        rules
            .iter()
            .any(|(g, rs)| g.is_empty() && rs.contains(&"namespaces".to_owned())),
        "{rules:?}"
    );
}

#[test]
fn without_its_entry_the_same_plugin_is_refused_with_the_usual_message_and_granted_nothing() {
    let err = role_for("weir", &[propagator()], &Policy::default(), false).unwrap_err();
    assert!(
        err.to_string().contains(
            "plugin propagator@1: parent test.weir.dev/v1 Propagation is cluster-scoped; only namespaced parents are served"
        ),
        "{err}"
    );
}

/// A plugin named `name` of a namespaced parent of its own CRD, writing `children`.
fn placing(name: &str, children: Vec<ResourceKind>) -> PluginInfo {
    let kind = format!("Spread{name}");
    let plural = format!("spread{name}s");
    PluginInfo {
        name: name.into(),
        version: "1".into(),
        parent: ResourceKind::of_v1("test.weir.dev", &kind, &plural, true),
        children,
        related: vec![],
        finalizer: None,
        crd: Some(format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.test.weir.dev\nspec:\n  group: test.weir.dev\n  names: {{kind: {kind}, plural: {plural}}}\n  scope: Namespaced\n  versions:\n  - {{name: v1, served: true, storage: true}}\n"
        )),
    }
}

#[test]
fn a_member_clusters_role_grants_the_child_and_related_kinds_of_the_plugins_the_policy_grants_it_only()
 {
    let deployments = ResourceKind::of_v1("apps", "Deployment", "deployments", true);
    let config_maps = ResourceKind::of_v1("", "ConfigMap", "configmaps", true);
    let reading = PluginInfo {
        related: vec![config_maps.clone()],
        ..placing("a", vec![deployments])
    };
    let infos = [reading, placing("b", vec![config_maps])];
    let only_a = |clusters: &[&str]| Grant {
        clusters: clusters.iter().map(|c| (*c).to_owned()).collect(),
        ..Grant::default()
    };
    let by_labels = Grant {
        cluster_selector: Some(LabelSelector {
            match_labels: BTreeMap::from([("env".into(), "prod".into())]),
            ..LabelSelector::default()
        }),
        ..Grant::default()
    };
    let policy = Policy {
        plugins: BTreeMap::from([("a".into(), only_a(&["member-a"])), ("b".into(), by_labels)]),
        ..Policy::default()
    };
    let rules = |rendered: &Rendered| -> Vec<(String, Vec<String>, Vec<String>)> {
        let role: ClusterRole = crate::yaml::from_str(&rendered.yaml).unwrap();
        role.rules
            .unwrap_or_default()
            .into_iter()
            .map(|r| {
                (
                    r.api_groups.unwrap()[0].clone(),
                    r.resources.unwrap(),
                    r.verbs,
                )
            })
            .collect()
    };
    let in_a = member_role_for(
        ("weir-member", ("member-a", &Labels::new())),
        &infos,
        &policy,
        false,
    )
    .unwrap();
    let verbs = |verbs: &[&str]| verbs.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        rules(&in_a),
        [
            ("".to_owned(), vec!["configmaps".to_owned()], verbs(RELATED)),
            (
                "apps".to_owned(),
                vec!["deployments".to_owned()],
                verbs(CHILD)
            ),
        ],
        "only a's children and related kinds, and nothing of its parent, in member-a"
    );
    assert!(in_a.yaml.contains("#   a 1"), "{}", in_a.yaml);
    let in_b = member_role_for(
        ("weir-member", ("member-b", &Labels::new())),
        &infos,
        &policy,
        false,
    )
    .unwrap();
    assert!(rules(&in_b).is_empty(), "no plugin is granted member-b");
    let prod = Labels::from([("env".to_owned(), "prod".to_owned())]);
    let in_prod =
        member_role_for(("weir-member", ("member-b", &prod)), &infos, &policy, false).unwrap();
    assert_eq!(
        rules(&in_prod),
        [(
            String::new(),
            vec!["configmaps".to_owned()],
            CHILD.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>()
        )],
        "b's children in a member labelled env=prod"
    );
    assert!(
        in_b.warnings
            .iter()
            .any(|w| w.contains("grants no plugin member cluster \"member-b\"")),
        "{:?}",
        in_b.warnings
    );
}
