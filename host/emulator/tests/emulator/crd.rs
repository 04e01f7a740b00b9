use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::{api_error, emulator};

/// A namespaced `Blog` kind with a status and a scale subresource and a small schema.
pub fn blog_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "blogs.weir.dev"},
        "spec": {"group": "weir.dev", "scope": "Namespaced",
            "names": {"plural": "blogs", "singular": "blog", "kind": "Blog", "shortNames": ["bl"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["title"], "properties": {
                        "title": {"type": "string", "minLength": 1},
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                        "theme": {"type": "string", "enum": ["light", "dark"]}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}, "ready": {"type": "boolean"}}}}}}}]}
    }))
    .unwrap()
}

pub fn blog_api(client: kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("weir.dev", "v1", "Blog"),
        "blogs",
    );
    Api::namespaced_with(client, "default", &ar)
}

fn blog(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "weir.dev/v1", "kind": "Blog", "metadata": {"name": name}, "spec": spec})).unwrap()
}

#[tokio::test]
async fn creating_a_crd_serves_its_kind_at_once_with_discovery() {
    let em = emulator().await;
    let crds: Api<CustomResourceDefinition> = Api::all(em.client());
    let created = crds
        .create(&PostParams::default(), &blog_crd())
        .await
        .unwrap();
    let established = created.status.unwrap().conditions.unwrap();
    assert!(
        established
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );
    let blogs = blog_api(em.client());
    let b = blogs
        .create(
            &PostParams::default(),
            &blog("hello", json!({"title": "Hi", "replicas": 2})),
        )
        .await
        .unwrap();
    assert_eq!(b.metadata.generation, Some(1));
    let discovery = Discovery::new(em.client()).run().await.unwrap();
    let (ar, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("weir.dev", "v1", "Blog"))
        .expect("Blog discovered");
    assert_eq!(ar.plural, "blogs");
    let subs: Vec<String> = caps
        .subresources
        .iter()
        .map(|(s, _)| s.plural.clone())
        .collect();
    assert!(
        subs.contains(&"status".to_string()) && subs.contains(&"scale".to_string()),
        "{subs:?}"
    );

    // Status subresource: the main endpoint ignores status.
    let pp = PatchParams::default();
    let main = blogs
        .patch(
            "hello",
            &pp,
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert!(main.data.get("status").is_none());
    let status = blogs
        .patch_status(
            "hello",
            &pp,
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["ready"], true);
    assert_eq!(status.metadata.generation, Some(1));

    // Scale subresource.
    let scale = blogs.get_scale("hello").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    blogs
        .patch_scale(
            "hello",
            &pp,
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(
        blogs.get("hello").await.unwrap().data["spec"]["replicas"],
        4
    );

    // Deleting the CRD removes the objects and the endpoint.
    crds.delete("blogs.weir.dev", &Default::default())
        .await
        .unwrap();
    let err = api_error(blogs.get("hello").await.unwrap_err());
    assert_eq!(err.code, 404);
}

#[tokio::test]
async fn schema_violations_are_422_with_field_paths_and_unknown_fields_are_pruned() {
    let em = emulator().await;
    let crds: Api<CustomResourceDefinition> = Api::all(em.client());
    crds.create(&PostParams::default(), &blog_crd())
        .await
        .unwrap();
    let blogs = blog_api(em.client());
    let err = api_error(
        blogs
            .create(
                &PostParams::default(),
                &blog("bad", json!({"replicas": "many", "theme": "pink"})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    for field in ["spec.replicas", "spec.theme", "spec.title"] {
        assert!(
            err.message.contains(field),
            "{field} missing from {}",
            err.message
        );
    }
    let causes = err.details.unwrap().causes;
    assert!(causes.iter().any(|c| c.field == "spec.replicas"));
    let ok = blogs
        .create(
            &PostParams::default(),
            &blog("ok", json!({"title": "x", "extra": 1})),
        )
        .await
        .unwrap();
    assert!(
        ok.data["spec"].get("extra").is_none(),
        "unknown fields are pruned"
    );
    let strict = PatchParams {
        field_validation: Some(kube::api::ValidationDirective::Strict),
        ..Default::default()
    };
    let err = api_error(
        blogs
            .patch("ok", &strict, &Patch::Merge(json!({"spec": {"extra": 1}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
    assert!(
        err.message.contains("unknown field \"spec.extra\""),
        "{}",
        err.message
    );
    assert_eq!(ok.name_any(), "ok");
}
