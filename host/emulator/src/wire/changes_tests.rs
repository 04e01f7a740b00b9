use serde_json::json;

use super::*;
use crate::wire::fieldset::to_fields_v1;

/// Owned as the main endpoint of a kind with `/status` owns: not `status`, not what no manager
/// owns (the names and stamps under `metadata`, `apiVersion`, `kind`).
fn owned(p: &[Step]) -> bool {
    let field = |i: usize| match p.get(i) {
        Some(Step::Field(f)) => Some(f.as_str()),
        _ => None,
    };
    !matches!(field(0), Some("status" | "apiVersion" | "kind"))
        && !(field(0) == Some("metadata") && matches!(field(1), Some("name" | "uid")))
}

/// A create's `fieldsV1` built in one walk, against the set of changed paths written out.
fn same_as_the_set(obj: &Value) -> Value {
    let walked = Value::Object(created_fields_v1(obj, &owned).expect("no key twice"));
    let set = changed_fields(None, obj, &owned).expect("no key twice");
    assert_eq!(
        walked,
        to_fields_v1(&set),
        "walked, against the set written out"
    );
    walked
}

#[test]
fn a_created_pods_fields_are_what_writing_its_changed_paths_gives() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "uid": "u1", "namespace": "default",
                     "labels": {"app": "web"}, "annotations": {},
                     "finalizers": ["a.example/x", "b.example/y"],
                     "ownerReferences": [{"uid": "r1", "kind": "ReplicaSet", "name": "web",
                                          "controller": true}]},
        "spec": {
            "containers": [
                {"name": "nginx", "image": "nginx:1.27", "args": ["-g", "daemon off;"],
                 "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
                 "env": [{"name": "A", "value": "1"}, {"name": "B"}],
                 "resources": {}},
                {"name": "side"}
            ],
            "volumes": [],
            "nodeSelector": {"disk": "ssd"},
            "restartPolicy": "Always"
        },
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}
    });
    let fields = same_as_the_set(&pod);
    // The parts that say how a create's fields are written: a keyed item is a field with `.`
    // beside its own fields; a set item a leaf; an empty map or list a leaf; no `status`.
    assert_eq!(
        fields["f:spec"]["f:containers"]["k:{\"name\":\"side\"}"],
        json!({".": {}, "f:name": {}})
    );
    assert_eq!(
        fields["f:metadata"]["f:finalizers"]["v:\"a.example/x\""],
        json!({})
    );
    assert_eq!(fields["f:metadata"]["f:annotations"], json!({}));
    assert_eq!(fields["f:spec"]["f:volumes"], json!({}));
    assert!(fields.get("f:status").is_none() && fields["f:metadata"].get("f:name").is_none());
}

#[test]
fn an_object_of_fields_no_one_owns_has_an_empty_set() {
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    assert_eq!(same_as_the_set(&obj), json!({}));
}

#[test]
fn a_keyed_list_holding_a_key_twice_is_left_to_the_lookup() {
    let obj = json!({"spec": {"containers": [{"name": "a"}, {"name": "a", "image": "x"}]}});
    assert_eq!(created_fields_v1(&obj, &owned), None);
    assert_eq!(changed_fields(None, &obj, &owned), None);
}
