//! The checks of an answer, case by case. One module over ~500 lines on purpose: the cases read
//! as one catalogue of what an answer may not do, beside the refusal catalogue they test.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::json;

use super::*;
use crate::answer::tests::judge_children as validate;
use crate::answer::{drift::holds, drift::live_holds, refusal::refusal_message};

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
            kind("", "v1", "Secret", "secrets", true),
            kind(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "clusterroles",
                false,
            ),
        ],
        related: vec![],
        finalizer: None,
        crd: None,
    }
}

fn parent() -> DynamicObject {
    let mut p = DynamicObject::new("my-blog", &info().parent.api_resource()).within("default");
    p.metadata.uid = Some("uid-parent".into());
    p
}

/// No live object at all.
fn none() -> Listed {
    Listed(Vec::new())
}

/// The live objects holding `object` alone, a ConfigMap.
fn holding(object: DynamicObject) -> Listed {
    Listed(vec![("ConfigMap".into(), Arc::new(object))])
}

/// The strict default policy, the test plugin's declaration and parent.
fn check(children: Vec<Value>, live: &Listed) -> Result<Vec<DesiredChild>, Refusal> {
    validate(
        &info(),
        &parent(),
        (children, None),
        live,
        &ValidationPolicy::default(),
    )
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
    let out = check(vec![cm("page")], &none()).unwrap();
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
fn null_labels_and_annotations_still_get_the_parent_label_and_hash_and_non_maps_are_refused() {
    let mut c = cm("page");
    c["metadata"]["labels"] = Value::Null;
    c["metadata"]["annotations"] = Value::Null;
    let out = check(vec![c.clone()], &none()).unwrap();
    let m = &out[0].manifest["metadata"];
    assert_eq!(m["labels"][PARENT_UID_LABEL], "uid-parent");
    assert!(m["annotations"][MANIFEST_HASH_ANNOTATION].is_string());
    c["metadata"]["labels"] = json!("a=b");
    let refused = check(vec![c], &none()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "child #0 has a missing or mistyped metadata.labels"
    );
}

#[test]
fn owner_references_and_server_fields_from_the_plugin_are_replaced() {
    let mut c = cm("page");
    c["metadata"]["ownerReferences"] = json!([{"uid": "someone-else", "controller": true}]);
    c["metadata"]["resourceVersion"] = json!("42");
    c["status"] = json!({"x": 1});
    let out = check(vec![c], &none()).unwrap();
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
    let a = check(vec![cm("page")], &none()).unwrap();
    let mut changed = cm("page");
    changed["data"]["a"] = json!("c");
    let b = check(vec![changed], &none()).unwrap();
    let hash =
        |d: &DesiredChild| d.manifest["metadata"]["annotations"][MANIFEST_HASH_ANNOTATION].clone();
    assert_ne!(hash(&a[0]), hash(&b[0]));
}

#[test]
fn an_undeclared_kind_is_refused() {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}});
    let err = check(vec![cm("ok"), service], &none()).unwrap_err();
    assert!(
        matches!(err, Refusal::UndeclaredKind { ref kind, .. } if kind == "Service"),
        "{err}"
    );
}

#[test]
fn a_declared_kind_under_another_api_version_is_refused() {
    let d = json!({"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "d"}});
    assert!(matches!(
        check(vec![d], &none()),
        Err(Refusal::UndeclaredKind { .. })
    ));
}

#[test]
fn cluster_scoped_children_are_refused() {
    let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}});
    assert!(matches!(
        check(vec![cr], &none()),
        Err(Refusal::UndeclaredKind { .. })
    ));
}

#[test]
fn another_namespace_is_refused() {
    let mut c = cm("page");
    c["metadata"]["namespace"] = json!("kube-system");
    let err = check(vec![c], &none()).unwrap_err();
    assert!(
        matches!(err, Refusal::Namespace { ref wanted, .. } if wanted == "kube-system"),
        "{err}"
    );
}

#[test]
fn the_parents_own_namespace_may_be_spelled_out() {
    let mut c = cm("page");
    c["metadata"]["namespace"] = json!("default");
    assert!(check(vec![c], &none()).is_ok());
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
        let r = check(vec![cm(bad)], &none());
        assert!(
            matches!(r, Err(Refusal::InvalidName { .. })),
            "{bad:?} accepted"
        );
    }
    assert!(is_valid_name("my-blog.page-1"));
}

#[test]
fn missing_fields_are_refused_with_the_field_named() {
    let r = check(
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap"})],
        &none(),
    );
    assert_eq!(
        r.unwrap_err(),
        Refusal::Malformed {
            index: 0,
            field: "metadata.name"
        }
    );
    let r = check(vec![json!("not an object")], &none());
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
    let r = check(vec![cm("a"), cm("a")], &none());
    assert!(matches!(r, Err(Refusal::Duplicate { .. })));
}

#[test]
fn too_many_or_too_large_children_are_refused() {
    let many: Vec<Value> = (0..=MAX_CHILDREN).map(|i| cm(&format!("c{i}"))).collect();
    assert!(matches!(
        check(many, &none()),
        Err(Refusal::TooLarge { .. })
    ));
    let mut big = cm("big");
    big["data"]["a"] = json!("x".repeat(MAX_CHILD_BYTES));
    assert!(matches!(
        check(vec![big], &none()),
        Err(Refusal::TooLarge { .. })
    ));
}

#[test]
fn a_child_within_the_size_limit_until_the_host_stamps_it_is_refused() {
    let mut big = cm("big");
    big["data"]["a"] = json!("");
    let pad = MAX_CHILD_BYTES - json_len(&big) - 10;
    big["data"]["a"] = json!("x".repeat(pad));
    assert!(json_len(&big) <= MAX_CHILD_BYTES);
    let r = check(vec![big.clone()], &none());
    assert!(
        matches!(&r, Err(Refusal::TooLarge { what, .. }) if what.starts_with("ConfigMap \"big\"")),
        "{r:?}"
    );
    big["data"]["a"] = json!("x".repeat(pad - 1024));
    assert_eq!(check(vec![big], &none()).unwrap().len(), 1);
}

#[test]
fn a_refused_answer_is_only_borrowed_by_the_checks() {
    let answer = vec![cm("a"), cm("a")];
    let before = answer.clone();
    let r = super::check(
        &info(),
        &parent(),
        (&answer, None),
        &[],
        &none(),
        &ValidationPolicy::default(),
    );
    assert!(matches!(r, Err(Refusal::Duplicate { .. })));
    assert_eq!(answer, before, "the answer stays the plugin's, for a dump");
}

#[test]
fn an_existing_object_controlled_by_another_owner_is_refused() {
    let c = holding(live_cm("page", Some("uid-other")));
    let err = check(vec![cm("page")], &c).unwrap_err();
    assert!(
        matches!(err, Refusal::Foreign { ref owner, .. } if owner.contains("uid-other")),
        "{err}"
    );
}

#[test]
fn an_existing_unowned_object_is_refused() {
    let c = holding(live_cm("page", None));
    let err = check(vec![cm("page")], &c).unwrap_err();
    assert!(matches!(err, Refusal::Foreign { .. }), "{err}");
}

#[test]
fn an_existing_object_this_parent_controls_is_passed_with_its_live_copy() {
    let c = holding(live_cm("page", Some("uid-parent")));
    let out = check(vec![cm("page")], &c).unwrap();
    assert!(out[0].live.is_some());
}

#[test]
fn a_child_with_finalizers_is_refused() {
    let mut c = cm("page");
    c["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let err = check(vec![c], &none()).unwrap_err();
    assert!(
        matches!(err, Refusal::Finalizers { ref finalizers, .. } if finalizers.contains("example.com/keep")),
        "{err}"
    );
    assert!(err.to_string().contains("may not put finalizers"), "{err}");
}

#[test]
fn an_empty_or_null_finalizer_list_is_not_a_finalizer() {
    for empty in [json!([]), Value::Null] {
        let mut c = cm("page");
        c["metadata"]["finalizers"] = empty;
        assert!(check(vec![c], &none()).is_ok());
    }
}

fn secret(name: &str, type_: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": type_})
}

#[test]
fn a_service_account_token_secret_is_refused_by_default() {
    let token = secret("token", SERVICE_ACCOUNT_TOKEN_TYPE);
    let err = check(vec![token], &none()).unwrap_err();
    assert_eq!(
        err,
        Refusal::SecretType {
            name: "token".into(),
            secret_type: SERVICE_ACCOUNT_TOKEN_TYPE.into(),
        }
    );
    assert!(
        err.to_string()
            .contains("kubernetes.io/service-account-token"),
        "{err}"
    );
}

#[test]
fn a_service_account_token_secret_passes_when_the_policy_allows_it() {
    let mut policy = ValidationPolicy::default();
    policy.secret_types.push(SERVICE_ACCOUNT_TOKEN_TYPE.into());
    let token = secret("token", SERVICE_ACCOUNT_TOKEN_TYPE);
    let out = validate(&info(), &parent(), (vec![token], None), &none(), &policy).unwrap();
    assert_eq!(out[0].manifest["type"], SERVICE_ACCOUNT_TOKEN_TYPE);
}

#[test]
fn a_secret_of_a_type_the_policy_leaves_out_is_refused_even_opaque() {
    let policy = ValidationPolicy {
        secret_types: vec!["kubernetes.io/tls".into()],
        ..ValidationPolicy::default()
    };
    let untyped = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"}});
    let err = validate(&info(), &parent(), (vec![untyped], None), &none(), &policy).unwrap_err();
    assert_eq!(
        err,
        Refusal::SecretType {
            name: "plain".into(),
            secret_type: "Opaque".into(),
        }
    );
    let bootstrap = secret("join", "bootstrap.kubernetes.io/token");
    let err = check(vec![bootstrap], &none()).unwrap_err();
    assert!(matches!(err, Refusal::SecretType { .. }), "{err:?}");
    let tls = secret("tls", "kubernetes.io/tls");
    assert!(validate(&info(), &parent(), (vec![tls], None), &none(), &policy).is_ok());
}

#[test]
fn secrets_of_types_the_plugin_fills_itself_pass() {
    let children = vec![
        secret("opaque", "Opaque"),
        secret("pull", "kubernetes.io/dockerconfigjson"),
        secret("tls", "kubernetes.io/tls"),
    ];
    assert_eq!(check(children, &none()).unwrap().len(), 3);
}

#[test]
fn a_status_larger_than_the_limit_is_refused_and_one_within_it_passes() {
    // `{"x":"…"}` is the filler plus 8 bytes.
    let status = |filler: usize| json!({"x": "y".repeat(filler)});
    let policy = ValidationPolicy::default();
    let within = status(MAX_STATUS_BYTES - 8);
    assert!(
        validate(
            &info(),
            &parent(),
            (vec![cm("page")], Some(&within)),
            &none(),
            &policy
        )
        .is_ok()
    );
    let over = status(MAX_STATUS_BYTES - 7);
    let err = validate(
        &info(),
        &parent(),
        (vec![cm("page")], Some(&over)),
        &none(),
        &policy,
    )
    .unwrap_err();
    assert_eq!(
        err,
        Refusal::StatusTooLarge {
            size: MAX_STATUS_BYTES + 1,
            limit: MAX_STATUS_BYTES
        }
    );
}

#[test]
fn the_refusal_message_names_the_plugin_and_the_reason() {
    let refusal = Refusal::Duplicate {
        kind: "ConfigMap".into(),
        name: "a".into(),
    };
    assert_eq!(
        refusal_message(&info(), &refusal),
        "plugin blog: answer refused: child ConfigMap \"a\" appears twice"
    );
}

/// Live objects from a list, as `weir test` has them.
struct Listed(Vec<(String, Arc<DynamicObject>)>);

impl LiveObjects for Listed {
    fn get(&self, _: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        self.0
            .iter()
            .find(|(k, o)| {
                k == kind
                    && o.metadata.name.as_deref() == Some(key.name.as_str())
                    && o.metadata.namespace == key.namespace
            })
            .map(|(_, o)| o.clone())
    }
}

#[test]
fn any_lookup_of_live_objects_decides_ownership() {
    let live = Listed(vec![(
        "ConfigMap".into(),
        Arc::new(live_cm("taken", Some("uid-other"))),
    )]);
    let policy = ValidationPolicy::default();
    let refused = validate(
        &info(),
        &parent(),
        (vec![cm("taken")], None),
        &live,
        &policy,
    );
    assert!(
        matches!(refused, Err(Refusal::Foreign { .. })),
        "{refused:?}"
    );
    let free = validate(&info(), &parent(), (vec![cm("free")], None), &live, &policy);
    assert!(free.is_ok());
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
