use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::runtime::watcher;
use serde_json::json;

use super::*;

fn kind(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
    }
}

fn info() -> PluginInfo {
    PluginInfo {
        name: "blog".into(),
        version: "0.1.0".into(),
        parent: kind("weir.dev", "v1alpha1", "Blog", "blogs", true),
        children: vec![
            kind("", "v1", "ConfigMap", "configmaps", true),
            kind("apps", "v1", "Deployment", "deployments", true),
            kind(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "clusterroles",
                false,
            ),
        ],
        finalizer: None,
        crd: None,
    }
}

fn parent() -> DynamicObject {
    let mut p = DynamicObject::new("my-blog", &info().parent.api_resource()).within("default");
    p.metadata.uid = Some("uid-parent".into());
    p
}

fn cache() -> Cache {
    let i = info();
    Cache::new(i.parent, &i.children)
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}})
}

fn live_cm(name: &str, controller: Option<&str>) -> DynamicObject {
    let mut o = DynamicObject::new(
        name,
        &kind("", "v1", "ConfigMap", "configmaps", true).api_resource(),
    )
    .within("default");
    o.metadata.owner_references = controller.map(|uid| {
        vec![OwnerReference {
            uid: uid.into(),
            controller: Some(true),
            ..OwnerReference::default()
        }]
    });
    o
}

#[test]
fn the_host_stamps_namespace_owner_reference_label_and_hash() {
    let out = validate(&info(), &parent(), vec![cm("page")], &cache()).unwrap();
    let m = &out[0].manifest;
    assert_eq!(m["metadata"]["namespace"], "default");
    let owner = &m["metadata"]["ownerReferences"][0];
    assert_eq!(owner["uid"], "uid-parent");
    assert_eq!(owner["kind"], "Blog");
    assert_eq!(owner["apiVersion"], "weir.dev/v1alpha1");
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);
    assert_eq!(m["metadata"]["labels"][PARENT_UID_LABEL], "uid-parent");
    assert!(m["metadata"]["annotations"][MANIFEST_HASH_ANNOTATION].is_string());
}

#[test]
fn owner_references_and_server_fields_from_the_plugin_are_replaced() {
    let mut c = cm("page");
    c["metadata"]["ownerReferences"] = json!([{"uid": "someone-else", "controller": true}]);
    c["metadata"]["resourceVersion"] = json!("42");
    c["status"] = json!({"x": 1});
    let out = validate(&info(), &parent(), vec![c], &cache()).unwrap();
    let m = &out[0].manifest;
    assert_eq!(
        m["metadata"]["ownerReferences"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(m["metadata"]["ownerReferences"][0]["uid"], "uid-parent");
    assert!(m["metadata"].get("resourceVersion").is_none());
    assert!(m.get("status").is_none());
}

#[test]
fn a_different_manifest_gets_a_different_hash() {
    let a = validate(&info(), &parent(), vec![cm("page")], &cache()).unwrap();
    let mut changed = cm("page");
    changed["data"]["a"] = json!("c");
    let b = validate(&info(), &parent(), vec![changed], &cache()).unwrap();
    let hash =
        |d: &DesiredChild| d.manifest["metadata"]["annotations"][MANIFEST_HASH_ANNOTATION].clone();
    assert_ne!(hash(&a[0]), hash(&b[0]));
}

#[test]
fn an_undeclared_kind_is_refused() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let err = validate(&info(), &parent(), vec![cm("ok"), secret], &cache()).unwrap_err();
    assert!(
        matches!(err, Refusal::UndeclaredKind { ref kind, .. } if kind == "Secret"),
        "{err}"
    );
}

#[test]
fn a_declared_kind_under_another_api_version_is_refused() {
    let d = json!({"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "d"}});
    assert!(matches!(
        validate(&info(), &parent(), vec![d], &cache()),
        Err(Refusal::UndeclaredKind { .. })
    ));
}

#[test]
fn cluster_scoped_children_are_refused() {
    let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}});
    assert!(matches!(
        validate(&info(), &parent(), vec![cr], &cache()),
        Err(Refusal::UndeclaredKind { .. })
    ));
}

#[test]
fn another_namespace_is_refused() {
    let mut c = cm("page");
    c["metadata"]["namespace"] = json!("kube-system");
    let err = validate(&info(), &parent(), vec![c], &cache()).unwrap_err();
    assert!(
        matches!(err, Refusal::Namespace { ref wanted, .. } if wanted == "kube-system"),
        "{err}"
    );
}

#[test]
fn the_parents_own_namespace_may_be_spelled_out() {
    let mut c = cm("page");
    c["metadata"]["namespace"] = json!("default");
    assert!(validate(&info(), &parent(), vec![c], &cache()).is_ok());
}

#[test]
fn invalid_names_are_refused() {
    for bad in [
        "",
        "UPPER",
        "-lead",
        "trail-",
        "a_b",
        "a..b",
        &"x".repeat(254),
    ] {
        let r = validate(&info(), &parent(), vec![cm(bad)], &cache());
        assert!(
            matches!(r, Err(Refusal::InvalidName { .. })),
            "{bad:?} accepted"
        );
    }
    assert!(is_valid_name("my-blog.page-1"));
}

#[test]
fn missing_fields_are_refused_with_the_field_named() {
    let r = validate(
        &info(),
        &parent(),
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap"})],
        &cache(),
    );
    assert_eq!(
        r.unwrap_err(),
        Refusal::Malformed {
            index: 0,
            field: "metadata.name"
        }
    );
    let r = validate(&info(), &parent(), vec![json!("not an object")], &cache());
    assert!(matches!(
        r,
        Err(Refusal::Malformed {
            field: "apiVersion",
            ..
        })
    ));
}

#[test]
fn duplicates_are_refused() {
    let r = validate(&info(), &parent(), vec![cm("a"), cm("a")], &cache());
    assert!(matches!(r, Err(Refusal::Duplicate { .. })));
}

#[test]
fn too_many_or_too_large_children_are_refused() {
    let many: Vec<Value> = (0..=MAX_CHILDREN).map(|i| cm(&format!("c{i}"))).collect();
    assert!(matches!(
        validate(&info(), &parent(), many, &cache()),
        Err(Refusal::TooLarge { .. })
    ));
    let mut big = cm("big");
    big["data"]["a"] = json!("x".repeat(MAX_CHILD_BYTES));
    assert!(matches!(
        validate(&info(), &parent(), vec![big], &cache()),
        Err(Refusal::TooLarge { .. })
    ));
}

#[test]
fn an_existing_object_controlled_by_another_owner_is_refused() {
    let c = cache();
    c.children[0].apply(watcher::Event::Apply(live_cm("page", Some("uid-other"))));
    let err = validate(&info(), &parent(), vec![cm("page")], &c).unwrap_err();
    assert!(
        matches!(err, Refusal::Foreign { ref owner, .. } if owner.contains("uid-other")),
        "{err}"
    );
}

#[test]
fn an_existing_unowned_object_is_refused() {
    let c = cache();
    c.children[0].apply(watcher::Event::Apply(live_cm("page", None)));
    let err = validate(&info(), &parent(), vec![cm("page")], &c).unwrap_err();
    assert!(matches!(err, Refusal::Foreign { .. }), "{err}");
}

#[test]
fn an_existing_object_this_parent_controls_is_passed_with_its_live_copy() {
    let c = cache();
    c.children[0].apply(watcher::Event::Apply(live_cm("page", Some("uid-parent"))));
    let out = validate(&info(), &parent(), vec![cm("page")], &c).unwrap();
    assert!(out[0].live.is_some());
}

#[test]
fn holds_ignores_server_defaults_but_not_changed_or_missing_fields() {
    let desired = json!({"spec": {"replicas": 2, "template": {"containers": [{"name": "web", "image": "nginx"}]}}});
    let live = json!({"spec": {"replicas": 2, "strategy": {}, "template": {"containers": [{"name": "web", "image": "nginx", "imagePullPolicy": "Always"}]}}});
    assert!(holds(&live, &desired));
    let scaled = json!({"spec": {"replicas": 3, "template": {"containers": [{"name": "web", "image": "nginx"}]}}});
    assert!(!holds(&scaled, &desired));
    let rolled_back = json!({"spec": {"replicas": 2, "template": {"containers": [{"name": "web", "image": "nginx:old"}]}}});
    assert!(!holds(&rolled_back, &desired));
    let extra_container = json!({"spec": {"replicas": 2, "template": {"containers": [{"name": "web", "image": "nginx"}, {"name": "x"}]}}});
    assert!(!holds(&extra_container, &desired));
    let no_annotation = json!({"metadata": {}});
    assert!(!holds(
        &no_annotation,
        &json!({"metadata": {"annotations": {"a": "b"}}})
    ));
}

#[test]
fn a_cached_child_holds_its_manifest_until_its_body_or_metadata_differ() {
    // A list response may omit apiVersion/kind; the live copy still holds the manifest.
    let mut live: DynamicObject =
        serde_json::from_value(json!({"metadata": {"name": "a", "namespace": "default",
            "uid": "u1", "labels": {"app": "web"}}, "data": {"a": "b", "added": "by-server"}}))
        .unwrap();
    live.types = None;
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "labels": {"app": "web"}}, "data": {"a": "b"}});
    assert!(live_holds(&live, &desired));
    let edited = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "labels": {"app": "web"}}, "data": {"a": "changed"}});
    assert!(!live_holds(&live, &edited));
    let relabelled = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "labels": {"app": "api"}}, "data": {"a": "b"}});
    assert!(!live_holds(&live, &relabelled));
    let new_field = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a"}, "binaryData": {"k": "dg=="}});
    assert!(!live_holds(&live, &new_field));
    // A body-less live object holds a manifest of metadata alone.
    assert!(live_holds(
        &live_cm("a", None),
        &json!({"metadata": {"name": "a"}})
    ));
    assert!(!live_holds(&live_cm("a", None), &cm("a")));
}
