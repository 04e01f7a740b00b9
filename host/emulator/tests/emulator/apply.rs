use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::{api_error, emulator};

fn cm(data: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data})
}

#[tokio::test]
async fn apply_creates_the_object_and_records_managed_fields() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let created = api
        .patch(
            "cfg",
            &PatchParams::apply("alice"),
            &Patch::Apply(cm(json!({"a": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(created.data.unwrap()["a"], "1");
    let managed = created.metadata.managed_fields.unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0].manager.as_deref(), Some("alice"));
    assert_eq!(managed[0].operation.as_deref(), Some("Apply"));
    let fields = serde_json::to_value(managed[0].fields_v1.as_ref().unwrap()).unwrap();
    assert_eq!(fields, json!({"f:data": {"f:a": {}}}));
    let log = em.requests();
    assert_eq!(log.last().unwrap().field_manager.as_deref(), Some("alice"));
    assert_eq!(
        log.last().unwrap().content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
}

#[tokio::test]
async fn a_conflicting_apply_is_rejected_unless_forced() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    api.patch(
        "cfg",
        &PatchParams::apply("alice"),
        &Patch::Apply(cm(json!({"a": "1"}))),
    )
    .await
    .unwrap();
    // Same value: shared ownership, no conflict.
    api.patch(
        "cfg",
        &PatchParams::apply("bob"),
        &Patch::Apply(cm(json!({"a": "1"}))),
    )
    .await
    .unwrap();
    let err = api_error(
        api.patch(
            "cfg",
            &PatchParams::apply("carol"),
            &Patch::Apply(cm(json!({"a": "2"}))),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("conflict with \"alice\""),
        "{}",
        err.message
    );
    assert!(err.message.contains(".data.a"), "{}", err.message);
    let forced = api
        .patch(
            "cfg",
            &PatchParams::apply("carol").force(),
            &Patch::Apply(cm(json!({"a": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["a"], "2");
    let owners: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(
        owners,
        vec!["carol"],
        "forcing takes the field from every other manager"
    );
}

#[tokio::test]
async fn reapplying_without_a_field_removes_it_unless_someone_else_owns_it() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let pp = PatchParams::apply("alice");
    api.patch(
        "cfg",
        &pp,
        &Patch::Apply(cm(json!({"a": "1", "b": "2", "c": "3"}))),
    )
    .await
    .unwrap();
    api.patch(
        "cfg",
        &PatchParams::apply("bob"),
        &Patch::Apply(cm(json!({"c": "3"}))),
    )
    .await
    .unwrap();
    let after = api
        .patch("cfg", &pp, &Patch::Apply(cm(json!({"a": "1"}))))
        .await
        .unwrap();
    let data = after.data.unwrap();
    assert_eq!(
        data.keys().cloned().collect::<Vec<_>>(),
        vec!["a", "c"],
        "b removed, c kept for bob"
    );
}

#[tokio::test]
async fn an_update_takes_ownership_and_then_conflicts_with_apply() {
    let em = emulator().await;
    let api: Api<Deployment> = Api::default_namespaced(em.client());
    let apply = |replicas: i32| {
        Patch::Apply(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}}}),
        )
    };
    api.patch("web", &PatchParams::apply("weir"), &apply(1))
        .await
        .unwrap();
    let scaled = api
        .patch(
            "web",
            &PatchParams {
                field_manager: Some("hpa".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    let managers: Vec<(String, String)> = scaled
        .managed_fields()
        .iter()
        .map(|m| (m.manager.clone().unwrap(), m.operation.clone().unwrap()))
        .collect();
    assert_eq!(
        managers,
        vec![
            ("weir".into(), "Apply".into()),
            ("hpa".into(), "Update".into())
        ]
    );
    let err = api_error(
        api.patch("web", &PatchParams::apply("weir"), &apply(2))
            .await
            .unwrap_err(),
    );
    assert!(
        err.message.contains("conflict with \"hpa\"") && err.message.contains(".spec.replicas"),
        "{}",
        err.message
    );
    // Containers are keyed by name: a second container from another manager merges in.
    let with_sidecar = api
        .patch("web", &PatchParams::apply("mesh"), &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "envoy"}]}}}})))
        .await
        .unwrap();
    let names: Vec<String> = with_sidecar
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, vec!["app", "proxy"]);
}

#[tokio::test]
async fn reapplying_an_identical_service_is_a_no_op() {
    let em = emulator().await;
    let api: Api<k8s_openapi::api::core::v1::Service> = Api::default_namespaced(em.client());
    let svc = Patch::Apply(
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
    );
    let first = api
        .patch("web", &PatchParams::apply("weir").force(), &svc)
        .await
        .unwrap();
    let second = api
        .patch("web", &PatchParams::apply("weir").force(), &svc)
        .await
        .unwrap();
    assert_eq!(
        second.resource_version(),
        first.resource_version(),
        "nothing changed, nothing written"
    );
    let ports = second.spec.unwrap().ports.unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(
        ports[0].protocol.as_deref(),
        Some("TCP"),
        "protocol defaulted"
    );
}

#[tokio::test]
async fn managed_fields_sent_in_a_patch_replace_the_stored_ones_as_csaupgrade_needs() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let created: ConfigMap = serde_json::from_value(cm(json!({"a": "1", "b": "2"}))).unwrap();
    let pp = kube::api::PostParams {
        field_manager: Some("alice".into()),
        ..Default::default()
    };
    let created = api.create(&pp, &created).await.unwrap();
    let mut entries = created.metadata.managed_fields.clone().unwrap();
    assert_eq!(entries[0].operation.as_deref(), Some("Update"));
    entries[0].operation = Some("Apply".into());
    let relabel = json!({"metadata": {"managedFields": entries,
        "resourceVersion": created.resource_version()}});
    let patched = api
        .patch("cfg", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    let managed = patched.metadata.managed_fields.unwrap();
    assert_eq!(managed.len(), 1, "{managed:?}");
    assert_eq!(managed[0].operation.as_deref(), Some("Apply"));
    // A stale resourceVersion is a precondition failure, not an overwrite.
    let stale = api_error(
        api.patch("cfg", &PatchParams::default(), &Patch::Merge(&relabel))
            .await
            .unwrap_err(),
    );
    assert_eq!(stale.code, 409);
    // Now the create's fields are alice's applied ones: applying without b removes it.
    let after = api
        .patch(
            "cfg",
            &PatchParams::apply("alice"),
            &Patch::Apply(cm(json!({"a": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        after.data.unwrap().keys().cloned().collect::<Vec<_>>(),
        vec!["a"]
    );
}

/// Raw Deployments: an item left without its key would not even deserialize as a `Deployment`.
fn deployments(em: &weir_emulator::Emulator) -> Api<DynamicObject> {
    Api::default_namespaced_with(em.client(), &ApiResource::erase::<Deployment>(&()))
}

/// A Deployment configuration with one container and the given keyed lists.
fn web(volumes: Value, mounts: Value, env: Value, ports: Value) -> Patch<Value> {
    Patch::Apply(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"volumes": volumes,
                                       "containers": [{"name": "app", "image": "nginx:1", "volumeMounts": mounts,
                                                       "env": env, "ports": ports}]}}}}),
    )
}

/// The items of the keyed list at `pointer` in the live Deployment.
async fn items(api: &Api<DynamicObject>, pointer: &str) -> Vec<Value> {
    let live = serde_json::to_value(api.get("web").await.unwrap()).unwrap();
    live.pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

const VOLUMES: &str = "/spec/template/spec/volumes";
const MOUNTS: &str = "/spec/template/spec/containers/0/volumeMounts";
const ENV: &str = "/spec/template/spec/containers/0/env";
const PORTS: &str = "/spec/template/spec/containers/0/ports";

#[tokio::test]
async fn reapplying_without_a_keyed_item_the_applier_owned_removes_the_whole_item() {
    let em = emulator().await;
    let api = deployments(&em);
    let weir = PatchParams::apply("weir");
    api.patch(
        "web",
        &weir,
        &web(
            json!([{"name": "plugins", "configMap": {"name": "weir-plugins"}}, {"name": "cache", "emptyDir": {}}]),
            json!([{"name": "plugins", "mountPath": "/plugins"}, {"name": "cache", "mountPath": "/cache"}]),
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
            json!([{"containerPort": 53, "protocol": "UDP", "name": "dns"}, {"containerPort": 53, "name": "dns-tcp"}, {"containerPort": 8080}]),
        ),
    )
    .await
    .unwrap();
    api.patch(
        "web",
        &weir,
        &web(
            json!([{"name": "cache", "emptyDir": {}}]),
            json!([{"name": "cache", "mountPath": "/cache"}]),
            json!([{"name": "A", "value": "1"}]),
            json!([{"containerPort": 53, "name": "dns-tcp"}, {"containerPort": 8080}]),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        items(&api, VOLUMES).await,
        vec![json!({"name": "cache", "emptyDir": {}})],
        "volumes are keyed by name"
    );
    assert_eq!(
        items(&api, MOUNTS).await,
        vec![json!({"name": "cache", "mountPath": "/cache"})],
        "volumeMounts are keyed by mountPath"
    );
    assert_eq!(
        items(&api, ENV).await,
        vec![json!({"name": "A", "value": "1"})]
    );
    let ports: Vec<(Value, Value)> = items(&api, PORTS)
        .await
        .iter()
        .map(|p| (p["containerPort"].clone(), p["protocol"].clone()))
        .collect();
    assert_eq!(
        ports,
        vec![(json!(53), json!("TCP")), (json!(8080), json!("TCP"))],
        "ports are keyed by containerPort and protocol: 53/UDP went, 53/TCP stayed"
    );

    // Dropping the last item drops the list.
    api.patch(
        "web",
        &weir,
        &web(json!([]), json!([]), json!([]), json!([])),
    )
    .await
    .unwrap();
    for pointer in [VOLUMES, MOUNTS, ENV, PORTS] {
        assert_eq!(items(&api, pointer).await, Vec::<Value>::new(), "{pointer}");
    }
}

#[tokio::test]
async fn a_dropped_keyed_item_keeps_only_what_another_applier_owns_and_goes_when_only_an_update_touched_it()
 {
    let em = emulator().await;
    let api = deployments(&em);
    let weir = PatchParams::apply("weir");
    api.patch(
        "web",
        &weir,
        &web(
            json!([{"name": "plugins", "configMap": {"name": "weir-plugins"}}, {"name": "cache", "emptyDir": {}}]),
            json!([{"name": "plugins", "mountPath": "/plugins"}, {"name": "cache", "mountPath": "/cache", "subPath": "weir"}]),
            json!([{"name": "A", "value": "1"}]),
            json!([]),
        ),
    )
    .await
    .unwrap();
    // Another applier owns a field inside the /cache mount (and, by applying it, the item and its key).
    api.patch(
        "web",
        &PatchParams::apply("mesh"),
        &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [{"name": "app",
            "volumeMounts": [{"name": "cache", "mountPath": "/cache", "readOnly": true}]}]}}}})),
    )
    .await
    .unwrap();
    // An ordinary update sets a field inside the /plugins mount and the plugins volume.
    api.patch(
        "web",
        &PatchParams {
            field_manager: Some("editor".into()),
            ..Default::default()
        },
        &Patch::Strategic(json!({"spec": {"template": {"spec": {
            "volumes": [{"name": "plugins", "configMap": {"optional": true}}],
            "containers": [{"name": "app", "volumeMounts": [{"mountPath": "/plugins", "readOnly": true}]}]}}}})),
    )
    .await
    .unwrap();
    assert_eq!(items(&api, MOUNTS).await[0]["readOnly"], true);

    api.patch(
        "web",
        &weir,
        &web(
            json!([]),
            json!([]),
            json!([{"name": "A", "value": "1"}]),
            json!([]),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        items(&api, MOUNTS).await,
        vec![json!({"name": "cache", "mountPath": "/cache", "readOnly": true})],
        "the /cache mount stays with mesh's fields only; the /plugins mount goes though an update set a field in it"
    );
    assert_eq!(
        items(&api, VOLUMES).await,
        Vec::<Value>::new(),
        "an updater owning a field inside an item does not keep the item"
    );
}
