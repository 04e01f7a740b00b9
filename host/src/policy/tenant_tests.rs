//! The confinement rules of a tenant plugin, each case one way a team's plugin could reach
//! beyond its namespace.

use super::*;
use crate::plugin::ResourceKind;
use crate::policy::{Discovered, Grant};

fn kind(group: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
    }
}

fn blogs() -> ResourceKind {
    kind("example.com", "Blog", "blogs", true)
}

fn configmaps() -> ResourceKind {
    kind("", "ConfigMap", "configmaps", true)
}

/// A plugin `p@1` of `parent` with `children`.
fn plugin(parent: ResourceKind, children: Vec<ResourceKind>) -> PluginInfo {
    PluginInfo {
        name: "p".into(),
        version: "1".into(),
        parent,
        children,
        related: vec![],
        finalizer: None,
        crd: None,
    }
}

/// The policy giving namespace `team-a` the Blog kind.
fn policy() -> Policy {
    let mut policy = Policy::default();
    policy.tenants.insert(
        "team-a".into(),
        Tenant {
            kinds: vec![GroupKind::new("example.com", "Blog")],
            secret_data: false,
            ..Tenant::default()
        },
    );
    policy
}

/// Discovery serving Blogs (namespaced, installed by the cluster admin) and the kinds below.
fn cluster() -> Discovered {
    let mut found = Discovered::default();
    let served = |k: &ResourceKind| Resolved::Served {
        plural: k.plural.clone(),
        scope: if k.namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        },
    };
    for k in [
        blogs(),
        configmaps(),
        kind("", "Secret", "secrets", true),
        kind("", "Namespace", "namespaces", false),
        kind("storage.k8s.io", "StorageClass", "storageclasses", false),
        kind("example.com", "Wiki", "wikis", true),
        kind("example.com", "Site", "sites", false),
    ] {
        found.insert(&k, served(&k));
    }
    found
}

fn refusal(namespace: &str, info: &PluginInfo, policy: &Policy) -> String {
    match admit_tenant(policy, namespace, info, &cluster()) {
        Ok(admitted) => panic!("admitted: {admitted:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_tenant_plugin_of_a_granted_kind_is_admitted_for_its_namespace() {
    let info = plugin(blogs(), vec![configmaps()]);
    let admitted = admit_tenant(&policy(), "team-a", &info, &cluster()).unwrap();
    assert_eq!(admitted.namespace, "team-a");
    assert_eq!(admitted.admitted.grant(), None, "nothing widened");
}

#[test]
fn a_namespace_without_a_tenant_entry_serves_nothing() {
    let info = plugin(blogs(), vec![]);
    let why = refusal("team-b", &info, &policy());
    assert!(
        why.contains("namespace team-b") && why.contains("tenants:"),
        "{why}"
    );
}

#[test]
fn a_kind_not_granted_to_the_namespace_is_refused_even_if_installed() {
    let info = plugin(kind("example.com", "Wiki", "wikis", true), vec![]);
    let why = refusal("team-a", &info, &policy());
    assert!(
        why.contains("Wiki") && why.contains("not granted to namespace team-a"),
        "{why}"
    );
}

#[test]
fn a_granted_kind_whose_crd_is_not_installed_is_refused_and_its_own_crd_changes_nothing() {
    let mut policy = policy();
    policy
        .tenants
        .get_mut("team-a")
        .unwrap()
        .kinds
        .push(GroupKind::new("example.com", "Page"));
    let mut info = plugin(kind("example.com", "Page", "pages", true), vec![]);
    info.crd = Some("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n".into());
    let why = refusal("team-a", &info, &policy);
    assert!(why.contains("installs its CRD"), "{why}");
}

#[test]
fn a_cluster_scoped_parent_child_or_related_kind_is_refused() {
    let mut policy = policy();
    policy
        .tenants
        .get_mut("team-a")
        .unwrap()
        .kinds
        .push(GroupKind::new("example.com", "Site"));
    let site = plugin(kind("example.com", "Site", "sites", false), vec![]);
    assert!(refusal("team-a", &site, &policy).contains("parent"));

    // A cluster-scoped child, even one the policy's children list allows.
    policy
        .children
        .push(GroupKind::new("storage.k8s.io", "StorageClass"));
    let child = plugin(
        blogs(),
        vec![kind(
            "storage.k8s.io",
            "StorageClass",
            "storageclasses",
            false,
        )],
    );
    let why = refusal("team-a", &child, &policy);
    assert!(
        why.contains("StorageClass") && why.contains("cluster-scoped"),
        "{why}"
    );

    // Namespace, which the cluster's own plugins may read.
    let mut related = plugin(blogs(), vec![]);
    related.related = vec![kind("", "Namespace", "namespaces", false)];
    let why = refusal("team-a", &related, &policy);
    assert!(
        why.contains("related") && why.contains("cluster-scoped"),
        "{why}"
    );
}

#[test]
fn a_tenant_plugin_named_after_a_widened_entry_gets_no_grant() {
    let mut policy = policy();
    policy.plugins.insert(
        "p".into(),
        Grant {
            namespaces: vec!["team-b".into()],
            secret_data: true,
            ..Grant::default()
        },
    );
    let why = refusal("team-a", &plugin(blogs(), vec![]), &policy);
    assert!(why.contains("no widened grant"), "{why}");
}

#[test]
fn a_tenant_never_gets_a_builtin_parent_even_when_listed() {
    let mut policy = policy();
    policy.builtin_parents.push(GroupKind::new("", "ConfigMap"));
    policy
        .tenants
        .get_mut("team-a")
        .unwrap()
        .kinds
        .push(GroupKind::new("", "ConfigMap"));
    let why = refusal("team-a", &plugin(configmaps(), vec![]), &policy);
    assert!(why.contains("not granted"), "{why}");
}

#[test]
fn the_rules_of_every_plugin_still_apply() {
    let role_writer = plugin(
        blogs(),
        vec![kind("rbac.authorization.k8s.io", "Role", "roles", true)],
    );
    let why = refusal("team-a", &role_writer, &policy());
    assert!(why.contains("never allowed"), "{why}");
}

#[test]
fn a_tenants_answers_are_judged_with_only_its_own_secret_data() {
    let mut policy = policy();
    policy.plugins.insert(
        "p".into(),
        Grant {
            namespaces: vec!["team-b".into()],
            ..Grant::default()
        },
    );
    let quiet = policy.tenants["team-a"].validation(&policy);
    assert_eq!(
        quiet.grant("p"),
        None,
        "the cluster entry of the same name is not used"
    );
    assert_eq!(quiet.grant("anything"), None);
    let open = Tenant {
        secret_data: true,
        ..policy.tenants["team-a"].clone()
    };
    let judged = open.validation(&policy);
    let grant = judged.grant("p").unwrap();
    assert!(grant.secret_data && grant.namespaces.is_empty() && !grant.cluster_scoped_parent);
    assert_eq!(judged.secret_types, policy.secret_types);
}

#[test]
fn a_policy_giving_a_tenant_a_builtin_kind_does_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(
        &path,
        "tenants:\n  team-a:\n    kinds: [{group: apps, kind: Deployment}]\n",
    )
    .unwrap();
    let err = Policy::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("team-a") && err.contains("Kubernetes' own API"),
        "{err}"
    );
    std::fs::write(&path, "tenants:\n  team-a:\n    kinds: [{group: example.com, kind: Blog}]\n    secretData: true\n").unwrap();
    let loaded = Policy::load(&path).unwrap();
    assert!(loaded.tenants["team-a"].secret_data);
}

#[test]
fn a_tenants_cache_cap_loads_and_a_cap_of_zero_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    let entry = "tenants:\n  team-a:\n    kinds: [{group: example.com, kind: Blog}]\n";
    std::fs::write(&path, format!("{entry}    maxCachedObjects: 0\n")).unwrap();
    let err = Policy::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("team-a") && err.contains("maxCachedObjects: 0"),
        "{err}"
    );
    std::fs::write(&path, format!("{entry}    maxCachedObjects: 500\n")).unwrap();
    let loaded = Policy::load(&path).unwrap();
    assert_eq!(loaded.tenants["team-a"].max_cached_objects, Some(500));
    std::fs::write(&path, entry).unwrap();
    let loaded = Policy::load(&path).unwrap();
    assert_eq!(
        loaded.tenants["team-a"].max_cached_objects, None,
        "no cap unless the entry sets one"
    );
}
