//! The policy's per-plugin entries: a widening only for the plugin it names, and exactly the
//! refusal of the default policy without one.

use super::*;
use crate::plugin::PluginInfo;

/// `p@1` reconciling a cluster-scoped `Tenant` its own CRD defines.
fn tenant_plugin(name: &str) -> PluginInfo {
    let parent = ResourceKind {
        group: "test.weir.dev".into(),
        version: "v1".into(),
        kind: "Tenant".into(),
        plural: "tenants".into(),
        namespaced: false,
    };
    PluginInfo {
        name: name.into(),
        version: "1".into(),
        parent,
        children: vec![],
        related: vec![],
        finalizer: None,
        crd: Some(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: tenants.test.weir.dev\nspec:\n  group: test.weir.dev\n  names: {kind: Tenant, plural: tenants}\n  scope: Cluster\n  versions:\n  - {name: v1, served: true, storage: true}\n"
                .into(),
        ),
    }
}

fn policy_from(yaml: &str) -> Policy {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, yaml).unwrap();
    Policy::load(&path).unwrap()
}

const TODAYS_REFUSAL: &str = "plugin p@1: parent test.weir.dev/v1 Tenant is cluster-scoped; only namespaced parents are served";

#[test]
fn a_cluster_scoped_parent_without_an_entry_is_refused_with_the_same_words_as_before() {
    let e = admit(&Policy::default(), &tenant_plugin("p"), &WellKnown).unwrap_err();
    assert_eq!(e.to_string(), TODAYS_REFUSAL);
    // An entry for another plugin, or one widening something else, changes nothing for it.
    let other =
        policy_from("plugins:\n  q: {clusterScopedParent: true}\n  p: {namespaces: [team-a]}\n");
    let e = admit(&other, &tenant_plugin("p"), &WellKnown).unwrap_err();
    assert_eq!(e.to_string(), TODAYS_REFUSAL);
}

#[test]
fn the_entry_of_a_plugin_admits_its_own_cluster_scoped_parent_and_says_so() {
    let policy = policy_from("plugins:\n  p: {clusterScopedParent: true, namespaces: [team-a]}\n");
    let admitted = admit(&policy, &tenant_plugin("p"), &WellKnown).unwrap();
    let grant = admitted
        .grant()
        .expect("the entry is part of the admission");
    assert_eq!(
        grant.lines(),
        ["cluster-scoped parent", "namespaces team-a"]
    );
}

#[test]
fn the_entry_does_not_admit_a_cluster_scoped_kind_the_plugin_did_not_define() {
    let policy = policy_from("plugins:\n  p: {clusterScopedParent: true}\n");
    let mut info = tenant_plugin("p");
    info.crd = None;
    let e = admit(&policy, &info, &WellKnown).unwrap_err();
    assert_eq!(e.to_string(), TODAYS_REFUSAL);
}

#[test]
fn a_plugin_entry_that_widens_nothing_is_no_grant() {
    let policy = policy_from("plugins:\n  p: {}\n");
    let mut info = tenant_plugin("p");
    info.parent.namespaced = true;
    info.crd = None;
    info.parent.group = "example.com".into();
    let admitted = admit(&policy, &info, &WellKnown).unwrap();
    assert!(admitted.grant().is_none());
}

#[test]
fn an_entry_with_a_bad_namespace_name_or_selector_or_field_does_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    for (yaml, says) in [
        (
            "plugins:\n  p: {namespaces: [\"*\"]}\n",
            "\"*\" is not a namespace name",
        ),
        (
            "plugins:\n  p: {namespaceSelector: {matchExpressions: [{key: a, operator: In}]}}\n",
            "plugin p is invalid",
        ),
        ("plugins:\n  p: {allNamespaces: true}\n", "does not parse"),
        (
            "plugins:\n  p: {clusters: [\"Member A\"]}\n",
            "\"Member A\" is not a cluster name",
        ),
        (
            "plugins:\n  \"*\": {clusters: [\"*\"], secretData: true}\n",
            "may only grant member clusters",
        ),
        (
            "plugins:\n  p: {clusterSelector: {matchExpressions: [{key: env, operator: In}]}}\n",
            "plugin p is invalid",
        ),
    ] {
        std::fs::write(&path, yaml).unwrap();
        let e = Policy::load(&path).unwrap_err();
        let text = crate::chain::Chain(&e).to_string();
        assert!(text.contains(says), "{yaml}: {text}");
    }
}

#[test]
fn the_entry_of_every_plugin_grants_clusters_to_a_plugin_without_its_own_and_shows_it() {
    let policy = policy_from(
        "plugins:\n  \"*\": {clusters: [member-a], clusterSelector: {matchLabels: {env: prod}}}\n  spread: {clusters: [\"*\"]}\n",
    );
    let lines = |plugin: &str| policy.grant_for(plugin).map(Grant::lines);
    assert_eq!(
        lines("other"),
        Some(vec![
            "children in member clusters member-a".to_owned(),
            "children in member clusters labelled env=prod".to_owned()
        ])
    );
    assert_eq!(
        lines("spread"),
        Some(vec!["children in member clusters *".to_owned()])
    );
    let validation = policy.validation();
    let allows = |plugin: &str, cluster: &str| {
        validation
            .grant(plugin)
            .is_some_and(|g| g.allows_cluster(cluster, None))
    };
    assert!(allows("other", "member-a") && !allows("other", "member-b"));
    let prod = crate::clusters::Labels::from([("env".to_owned(), "prod".to_owned())]);
    let other = validation.grant("other");
    assert!(other.is_some_and(|g| g.allows_cluster("member-b", Some(&prod))));
    assert!(
        allows("spread", "member-b"),
        "its own entry, not every plugin's"
    );
    assert!(
        policy_from("plugins:\n  p: {clusters: [member-a]}\n")
            .validation()
            .grant("q")
            .is_none(),
        "without the entry of every plugin another plugin is granted nothing"
    );
}
