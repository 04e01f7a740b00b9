use serde_json::json;

use super::*;

#[test]
fn a_misspelt_deployment_field_is_found_and_pruned() {
    let mut obj = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "labelz": {}},
        "spec": {"replica": 2, "template": {"spec": {"containers": [{"name": "a", "imagee": "x"}]}}}});
    let unknown = pruner().prune_unknown("apps", "Deployment", &mut obj);
    assert_eq!(
        unknown.unwrap(),
        [
            "metadata.labelz",
            "spec.replica",
            "spec.template.spec.containers[0].imagee"
        ]
    );
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0],
        json!({"name": "a"})
    );
}

#[test]
fn map_values_and_free_form_fields_are_not_unknown() {
    let mut obj = json!({"metadata": {"labels": {"any": "x"}}, "data": {"k": "v"}});
    let unknown = pruner().prune_unknown("", "ConfigMap", &mut obj);
    assert_eq!(unknown, Some(vec![]));
    assert_eq!(obj["data"], json!({"k": "v"}));
}

#[test]
fn a_kind_that_is_not_built_in_has_no_schema_here() {
    let mut obj = json!({"spec": {"anything": 1}});
    assert_eq!(
        pruner().prune_unknown("example.com", "Blog", &mut obj),
        None
    );
    assert_eq!(obj, json!({"spec": {"anything": 1}}));
}

#[test]
fn a_schema_that_refers_to_itself_is_followed_to_any_depth() {
    // A CRD's `openAPIV3Schema` is a JSONSchemaProps whose `properties` are JSONSchemaProps.
    let mut obj = json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
        "type": "object",
        "properties": {"spec": {"type": "object", "typo": true,
            "properties": {"size": {"type": "integer", "typo2": 1}}}}}}}]}});
    let unknown = pruner()
        .prune_unknown("apiextensions.k8s.io", "CustomResourceDefinition", &mut obj)
        .unwrap();
    assert_eq!(
        unknown,
        [
            "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size.typo2",
            "spec.versions[0].schema.openAPIV3Schema.properties.spec.typo"
        ]
    );
    assert_eq!(
        obj.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size"),
        Some(&json!({"type": "integer"}))
    );
}
