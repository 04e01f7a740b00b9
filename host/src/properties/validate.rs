//! Validation of a plugin's answer: never a panic, accepted exactly when the stated rules hold, and every accepted child stamped.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::DynamicObject;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::{config, json_with, one_of};
use crate::answer::tests::judge_children as validate;
use crate::answer::{
    LiveObjects, MANIFEST_HASH_ANNOTATION, PARENT_UID_LABEL, SERVICE_ACCOUNT_TOKEN_TYPE,
    ValidationPolicy, controller_uid,
};
use crate::plugin::{PluginInfo, ResourceKind};
use crate::runtime::ObjectKey;

const PARENT_UID: &str = "uid-parent";

fn kind(group: &str, version: &str, kind: &str, namespaced: bool) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
        namespaced,
    }
}

/// The kinds a plugin may declare; children are drawn from these and one more it never can.
fn kinds() -> Vec<ResourceKind> {
    vec![
        kind("", "v1", "ConfigMap", true),
        kind("", "v1", "Secret", true),
        kind("apps", "v1", "Deployment", true),
        kind("rbac.authorization.k8s.io", "v1", "ClusterRole", false),
    ]
}

fn plugin(children: Vec<ResourceKind>) -> PluginInfo {
    PluginInfo {
        name: "prop".into(),
        version: "0.1.0".into(),
        parent: kind("weir.dev", "v1alpha1", "Blog", true),
        children,
        related: vec![],
        finalizer: None,
        crd: None,
    }
}

fn parent(namespace: Option<String>) -> DynamicObject {
    let mut p = DynamicObject::new("my-blog", &plugin(vec![]).parent.api_resource());
    p.metadata.namespace = namespace;
    p.metadata.uid = Some(PARENT_UID.into());
    p
}

/// Live objects by (apiVersion, kind, key).
struct Live(HashMap<(String, String, ObjectKey), Arc<DynamicObject>>);

impl LiveObjects for Live {
    fn get(&self, api_version: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        self.0
            .get(&(api_version.to_owned(), kind.to_owned(), key.clone()))
            .cloned()
    }
}

/// A live object under `name` in `default` of every kind, controlled by `controller` (or no one).
fn live(names: Vec<(String, Option<String>)>) -> Live {
    let mut map = HashMap::new();
    for (name, controller) in names {
        for k in kinds() {
            let mut o = DynamicObject::new(&name, &k.api_resource()).within("default");
            o.metadata.owner_references = controller.clone().map(|uid| {
                vec![OwnerReference {
                    uid,
                    controller: Some(true),
                    ..OwnerReference::default()
                }]
            });
            let key = ObjectKey::new("default", name.clone());
            map.insert((k.api_version(), k.kind.clone(), key), Arc::new(o));
        }
    }
    Live(map)
}

/// A field of a generated child: absent, or this value.
fn maybe(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop::option::weighted(0.5, value)
}

fn name() -> impl Strategy<Value = String> {
    one_of(&["web", "db", "a.b-1", "Bad_Name", "", "-x", "x."])
}

/// Near-valid children: each field right most of the time, wrong in every way it can be.
fn child() -> impl Strategy<Value = Value> {
    let type_meta = prop::sample::select(
        &[
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("apps/v1", "Deployment"),
            ("apps/v2", "Deployment"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("v1", "Pod"),
        ][..],
    );
    let meta_key = one_of(&["a", PARENT_UID_LABEL, MANIFEST_HASH_ANNOTATION]);
    let map = || json_with(meta_key.clone());
    (
        (
            type_meta,
            any::<bool>(),
            prop_oneof![9 => name().prop_map(Value::from), 1 => Just(json!(7))],
        ),
        maybe(prop_oneof![
            one_of(&["default", "other"]).prop_map(Value::from),
            Just(json!(1))
        ]),
        maybe(prop_oneof![
            Just(json!(null)),
            Just(json!([])),
            Just(json!(["x"])),
            Just(json!("x"))
        ]),
        (maybe(map()), maybe(map())),
        maybe(
            one_of(&["Opaque", SERVICE_ACCOUNT_TOKEN_TYPE, "example.com/x"]).prop_map(Value::from),
        ),
        (
            maybe(json_with(one_of(&["uid", "controller"]))),
            maybe(json_with(one_of(&["x"]))),
        ),
    )
        .prop_map(
            |(
                (tm, typed, name),
                ns,
                finalizers,
                (labels, annotations),
                secret_type,
                (owners, rest),
            )| {
                let mut meta = json!({"name": name, "uid": "u", "resourceVersion": "9"});
                for (field, value) in [
                    ("namespace", ns),
                    ("finalizers", finalizers),
                    ("labels", labels),
                    ("annotations", annotations),
                    ("ownerReferences", owners),
                ] {
                    if let Some(v) = value {
                        meta[field] = v;
                    }
                }
                let mut c = json!({"metadata": meta, "status": rest.clone(), "data": rest});
                if typed {
                    c["apiVersion"] = json!(tm.0);
                    c["kind"] = json!(tm.1);
                }
                if let Some(t) = secret_type {
                    c["type"] = t;
                }
                c
            },
        )
}

fn is_dns_subdomain(name: &str) -> bool {
    let label = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'-'))
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    name.len() <= 253 && name.split('.').all(label)
}

/// The rules of the module's documentation, one child at a time (duplicates aside).
fn acceptable(
    info: &PluginInfo,
    parent_ns: Option<&str>,
    child: &Value,
    live: &Live,
    policy: &ValidationPolicy,
) -> bool {
    let (Some(api_version), Some(kind), Some(name)) = (
        child["apiVersion"].as_str(),
        child["kind"].as_str(),
        child["metadata"]["name"].as_str(),
    ) else {
        return false;
    };
    let declared = info
        .children
        .iter()
        .any(|k| k.api_version() == api_version && k.kind == kind && k.namespaced);
    let Some(parent_ns) = parent_ns else {
        return false;
    };
    let namespace_ok = child["metadata"]["namespace"]
        .as_str()
        .is_none_or(|ns| ns == parent_ns);
    let finalizers = &child["metadata"]["finalizers"];
    let no_finalizers = finalizers.is_null() || finalizers.as_array().is_some_and(Vec::is_empty);
    let maps = ["labels", "annotations"].iter().all(|f| {
        let m = &child["metadata"][f];
        m.is_null() || m.is_object()
    });
    let secret_ok = !(kind == "Secret" && api_version == "v1")
        || policy.allows_secret_type(child["type"].as_str().unwrap_or("Opaque"));
    let ours = live
        .get(api_version, kind, &ObjectKey::new(parent_ns, name))
        .is_none_or(|o| controller_uid(&o) == Some(PARENT_UID));
    declared && namespace_ok && is_dns_subdomain(name) && no_finalizers && maps && secret_ok && ours
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_answer_passes_exactly_when_every_child_keeps_the_rules_and_comes_out_stamped(
        declared in prop::sample::subsequence(kinds(), 0..=4),
        parent_ns in prop::option::weighted(0.9, Just("default".to_owned())),
        children in prop::collection::vec(child(), 0..4),
        live_names in prop::collection::vec(
            (name(), prop::option::of(one_of(&[PARENT_UID, "uid-other"]))), 0..2),
    ) {
        let info = plugin(declared);
        let parent = parent(parent_ns.clone());
        let live = live(live_names);
        let policy = ValidationPolicy::default();
        let answer = validate(&info, &parent, (children.clone(), None), &live, &policy);

        let mut seen = HashSet::new();
        let expected = children.iter().all(|c| {
            acceptable(&info, parent_ns.as_deref(), c, &live, &policy)
                && seen.insert((c["kind"].to_string(), c["metadata"]["name"].to_string()))
        });
        prop_assert_eq!(answer.is_ok(), expected, "{:?}", answer.as_ref().err());

        let again = validate(&info, &parent, (children.clone(), None), &live, &policy);
        prop_assert_eq!(
            answer.as_ref().ok().map(|a| a.iter().map(|c| c.manifest.clone()).collect::<Vec<_>>()),
            again.ok().map(|a| a.into_iter().map(|c| c.manifest).collect::<Vec<_>>()),
            "the same answer validates the same way"
        );

        let owner = json!([{"apiVersion": "weir.dev/v1alpha1", "kind": "Blog", "name": "my-blog",
            "uid": PARENT_UID, "controller": true, "blockOwnerDeletion": true}]);
        for (out, sent) in answer.unwrap_or_default().iter().zip(&children) {
            let m = &out.manifest;
            prop_assert!(info.children.contains(&out.kind) && out.kind.namespaced);
            let api_version = out.kind.api_version();
            prop_assert_eq!(m["apiVersion"].as_str(), Some(api_version.as_str()));
            prop_assert_eq!(&m["kind"], &json!(out.kind.kind));
            prop_assert_eq!(&m["metadata"]["name"], &sent["metadata"]["name"]);
            prop_assert_eq!(out.key.namespace.as_deref(), parent_ns.as_deref());
            prop_assert_eq!(m["metadata"]["namespace"].as_str(), parent_ns.as_deref());
            prop_assert_eq!(&m["metadata"]["ownerReferences"], &owner);
            prop_assert_eq!(&m["metadata"]["labels"][PARENT_UID_LABEL], &json!(PARENT_UID), "{}", m);
            let hash = m["metadata"]["annotations"][MANIFEST_HASH_ANNOTATION].as_str();
            prop_assert!(hash.is_some_and(|h| h.len() == 16), "{}", m);
            prop_assert!(m.get("status").is_none());
            for server_owned in ["uid", "resourceVersion"] {
                prop_assert!(m["metadata"].get(server_owned).is_none());
            }
        }
    }

    #[test]
    fn no_answer_makes_validation_panic(
        declared in prop::sample::subsequence(kinds(), 0..=4),
        children in prop::collection::vec(
            prop_oneof![child(), json_with(one_of(&["apiVersion", "kind", "metadata", "name"]))],
            0..4),
        status in prop::option::of(json_with(one_of(&["a", "conditions"]))),
    ) {
        let _ = validate(
            &plugin(declared),
            &parent(Some("default".into())),
            (children, status.as_ref()),
            &live(vec![]),
            &ValidationPolicy::default(),
        );
    }
}
