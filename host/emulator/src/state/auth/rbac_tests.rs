//! The evaluator against kube-apiserver's own cases: request parsing, rule matching, bindings.

use super::*;
use crate::write::opts::{Validation, WriteOpts};
use serde_json::json;

fn attrs(method: &str, path: &str, query: &str) -> Attributes {
    Attributes::of_request(&method.parse().unwrap_or(http::Method::GET), path, query)
}

fn rule(v: Value) -> PolicyRule {
    serde_json::from_value(v).unwrap_or_default()
}

fn sa(ns: &str, name: &str) -> User {
    User {
        name: format!("system:serviceaccount:{ns}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated".into(),
        ],
    }
}

fn store_with(objects: &[Value]) -> Store {
    let mut store = Store::new(100);
    let opts = WriteOpts {
        manager: "test".into(),
        validation: Validation::Ignore,
        dry_run: false,
        force: false,
    };
    for obj in objects {
        let (group, version) = obj["apiVersion"]
            .as_str()
            .and_then(|v| v.rsplit_once('/'))
            .unwrap_or(("", "v1"));
        let plural = format!(
            "{}s",
            obj["kind"].as_str().unwrap_or_default().to_lowercase()
        );
        let rt = store.registry.find(group, version, &plural).cloned();
        let rt = rt.unwrap_or_else(|| panic!("{plural} is served"));
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
        if let Err(e) = crate::write::ops::create(&mut store, &rt, ns, obj.clone(), &opts) {
            panic!("creating {obj}: {e}");
        }
    }
    store
}

#[test]
fn a_collection_get_is_list_or_watch_and_a_named_one_get() {
    let list = attrs("GET", "/api/v1/namespaces/default/configmaps", "");
    assert_eq!(list.verb, "list");
    let r = list.resource.as_ref().unwrap_or_else(|| panic!("resource"));
    assert_eq!(
        (r.namespace.as_str(), r.resource.as_str()),
        ("default", "configmaps")
    );
    assert_eq!(
        attrs("GET", "/apis/apps/v1/deployments", "watch=true").verb,
        "watch"
    );
    let get = attrs(
        "GET",
        "/apis/weir.dev/v1alpha1/namespaces/ns/blogs/b/status",
        "",
    );
    assert_eq!(get.verb, "get");
    let r = get.resource.unwrap_or_default();
    assert_eq!(
        (r.group.as_str(), r.name.as_str(), r.combined().as_str()),
        ("weir.dev", "b", "blogs/status")
    );
    assert_eq!(
        attrs("DELETE", "/api/v1/namespaces/ns/pods", "").verb,
        "deletecollection"
    );
}

#[test]
fn a_field_selector_on_the_name_names_the_object() {
    let watch = attrs(
        "GET",
        "/api/v1/namespaces/ns/pods",
        "watch=1&fieldSelector=metadata.name%3Dweb",
    );
    assert_eq!(watch.resource.unwrap_or_default().name, "web");
}

#[test]
fn discovery_and_health_are_non_resource_requests() {
    for path in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps",
        "/apis/apps/v1",
        "/healthz",
        "/openapi/v3",
    ] {
        let a = attrs("GET", path, "");
        assert_eq!((a.resource, a.verb.as_str()), (None, "get"), "{path}");
    }
}

#[test]
fn a_namespace_is_its_own_namespace_and_keeps_its_status_subresource() {
    let a = attrs("PUT", "/api/v1/namespaces/team/status", "")
        .resource
        .unwrap_or_default();
    assert_eq!(
        (
            a.namespace.as_str(),
            a.resource.as_str(),
            a.name.as_str(),
            a.subresource.as_str()
        ),
        ("team", "namespaces", "team", "status")
    );
}

#[test]
fn rules_match_verbs_groups_resources_subresources_and_names() {
    let status = attrs("PATCH", "/apis/weir.dev/v1/namespaces/n/blogs/b/status", "");
    assert!(rule_allows(
        &rule(
            json!({"verbs": ["patch"], "apiGroups": ["weir.dev"], "resources": ["blogs/status"]})
        ),
        &status
    ));
    assert!(rule_allows(
        &rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]})),
        &status
    ));
    assert!(
        !rule_allows(
            &rule(json!({"verbs": ["patch"], "apiGroups": ["weir.dev"], "resources": ["blogs"]})),
            &status
        ),
        "the resource does not grant its subresources"
    );
    assert!(!rule_allows(
        &rule(json!({"verbs": ["get"], "apiGroups": ["weir.dev"], "resources": ["blogs/status"]})),
        &status
    ));
    assert!(!rule_allows(
        &rule(json!({"verbs": ["patch"], "apiGroups": [""], "resources": ["blogs/status"]})),
        &status
    ));
    let named = json!({"verbs": ["patch"], "apiGroups": ["weir.dev"], "resources": ["blogs/status"], "resourceNames": ["b"]});
    assert!(rule_allows(&rule(named.clone()), &status));
    let other = attrs("PATCH", "/apis/weir.dev/v1/namespaces/n/blogs/c/status", "");
    assert!(!rule_allows(&rule(named.clone()), &other));
    let list = attrs("GET", "/apis/weir.dev/v1/namespaces/n/blogs", "");
    let mut named_list = named;
    named_list["verbs"] = json!(["list"]);
    named_list["resources"] = json!(["blogs"]);
    assert!(
        !rule_allows(&rule(named_list), &list),
        "resourceNames never match a collection"
    );
}

#[test]
fn non_resource_urls_match_exactly_or_by_a_trailing_star() {
    let r = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*", "/healthz"]}));
    assert!(rule_allows(&r, &attrs("GET", "/apis/apps", "")));
    assert!(rule_allows(&r, &attrs("GET", "/healthz", "")));
    assert!(!rule_allows(&r, &attrs("GET", "/healthz/etcd", "")));
    assert!(!rule_allows(&r, &attrs("POST", "/healthz", "")));
    assert!(
        !rule_allows(&r, &attrs("GET", "/apis/apps/v1/deployments", "")),
        "a resource request needs resources"
    );
}

fn blog_reader() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "weir"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cm-reader"},
               "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "leases", "namespace": "weir"},
               "rules": [{"verbs": ["get"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "leases", "namespace": "weir"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leases"},
               "subjects": [{"kind": "ServiceAccount", "name": "host"}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "cm", "namespace": "other"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm-reader"},
               "subjects": [{"kind": "Group", "name": "system:serviceaccounts:weir"}]}),
    ]
}

#[test]
fn a_role_binding_grants_only_in_its_namespace() {
    let store = store_with(&blog_reader());
    let host = sa("weir", "host");
    let lease = attrs(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/weir/leases/l",
        "",
    );
    let decision = authorize(&store, &host, &lease);
    assert!(decision.allowed);
    assert_eq!(
        decision.reason,
        r#"RBAC: allowed by RoleBinding "leases/weir" of Role "leases" to ServiceAccount "weir/host""#
    );
    let elsewhere = attrs(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
        "",
    );
    assert!(!authorize(&store, &host, &elsewhere).allowed);
    assert!(
        !authorize(&store, &sa("weir", "someone"), &lease).allowed,
        "the binding names one account"
    );
}

#[test]
fn a_cluster_role_bound_in_a_namespace_grants_there_only_and_groups_match() {
    let store = store_with(&blog_reader());
    let host = sa("weir", "host");
    assert!(
        authorize(
            &store,
            &host,
            &attrs("GET", "/api/v1/namespaces/other/configmaps", "")
        )
        .allowed
    );
    assert!(!authorize(&store, &host, &attrs("GET", "/api/v1/configmaps", "")).allowed);
    assert!(
        !authorize(
            &store,
            &sa("default", "x"),
            &attrs("GET", "/api/v1/namespaces/other/configmaps", "")
        )
        .allowed
    );
}

#[test]
fn a_cluster_role_binding_grants_everywhere_and_its_removal_takes_it_back() {
    let mut objects = blog_reader();
    objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "cm"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "host", "namespace": "weir"}]}));
    let store = store_with(&objects);
    let list_all = attrs("GET", "/api/v1/configmaps", "");
    assert!(authorize(&store, &sa("weir", "host"), &list_all).allowed);
    let store = store_with(&blog_reader());
    assert!(!authorize(&store, &sa("weir", "host"), &list_all).allowed);
}

#[test]
fn the_bootstrap_policy_allows_discovery_to_the_authenticated_and_health_to_all() {
    let store = store_with(&[]);
    assert!(authorize(&store, &sa("a", "b"), &attrs("GET", "/apis/apps/v1", "")).allowed);
    assert!(
        authorize(
            &store,
            &sa("a", "b"),
            &attrs(
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                ""
            )
        )
        .allowed
    );
    assert!(authorize(&store, &User::anonymous(), &attrs("GET", "/readyz", "")).allowed);
    assert!(!authorize(&store, &User::anonymous(), &attrs("GET", "/api", "")).allowed);
    assert!(
        authorize(
            &store,
            &User::admin(),
            &attrs("DELETE", "/api/v1/namespaces/x", "")
        )
        .allowed
    );
}

#[test]
fn a_denial_reads_as_kube_apiservers() {
    let user = "system:serviceaccount:weir:weir";
    assert_eq!(
        attrs("GET", "/api/v1/namespaces/default/configmaps", "").denial(user),
        r#"User "system:serviceaccount:weir:weir" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    assert_eq!(
        attrs("GET", "/apis/apps/v1/deployments", "watch=true").denial(user),
        r#"User "system:serviceaccount:weir:weir" cannot watch resource "deployments" in API group "apps" at the cluster scope"#
    );
    assert_eq!(
        attrs("GET", "/api", "").denial("system:anonymous"),
        r#"User "system:anonymous" cannot get path "/api""#
    );
}
