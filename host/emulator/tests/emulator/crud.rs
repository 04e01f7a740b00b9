use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::{api_error, configmap, deployment, emulator};

#[tokio::test]
async fn create_assigns_uid_timestamp_generation_and_increasing_resource_versions() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let a = configmap("a").create(&api).await;
    let b = configmap("b").create(&api).await;
    assert!(!a.uid().unwrap().is_empty());
    assert_ne!(a.uid(), b.uid());
    assert!(a.metadata.creation_timestamp.is_some());
    assert_eq!(a.metadata.generation, Some(1));
    let rv = |c: &ConfigMap| c.resource_version().unwrap().parse::<u64>().unwrap();
    assert!(rv(&b) > rv(&a));
    assert_eq!(a.namespace().as_deref(), Some("default"));
    let again = api
        .create(&PostParams::default(), &configmap("a").build())
        .await
        .unwrap_err();
    let status = api_error(again);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists")
    );
}

#[tokio::test]
async fn update_with_a_stale_resource_version_is_a_conflict() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let first = configmap("x").data("k", "1").create(&api).await;
    let mut fresh = first.clone();
    fresh.data = Some([("k".to_string(), "2".to_string())].into());
    let updated = api
        .replace("x", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_ne!(updated.resource_version(), first.resource_version());
    let mut stale = first.clone();
    stale.data = Some([("k".to_string(), "3".to_string())].into());
    let status = api_error(
        api.replace("x", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(
        status.message.contains("the object has been modified"),
        "{}",
        status.message
    );
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["k"], "2");
}

#[tokio::test]
async fn generation_moves_on_spec_changes_only() {
    let em = emulator().await;
    let api: Api<Deployment> = Api::default_namespaced(em.client());
    api.create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    let pp = PatchParams::default();
    let labelled = api
        .patch(
            "web",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(1));
    let scaled = api
        .patch("web", &pp, &Patch::Merge(json!({"spec": {"replicas": 3}})))
        .await
        .unwrap();
    assert_eq!(scaled.metadata.generation, Some(2));
    let status = api
        .patch_status(
            "web",
            &pp,
            &Patch::Merge(json!({"status": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(status.metadata.generation, Some(2));
    assert_eq!(status.status.unwrap().replicas, Some(3));
}

#[tokio::test]
async fn main_endpoint_ignores_status_and_status_endpoint_ignores_spec() {
    let em = emulator().await;
    let api: Api<Deployment> = Api::default_namespaced(em.client());
    api.create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    let pp = PatchParams::default();
    let main = api
        .patch(
            "web",
            &pp,
            &Patch::Merge(json!({"spec": {"replicas": 2}, "status": {"replicas": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(main.spec.unwrap().replicas, Some(2));
    assert_eq!(main.status.and_then(|s| s.replicas), None);
    let status = api
        .patch_status(
            "web",
            &pp,
            &Patch::Merge(json!({"spec": {"replicas": 7}, "status": {"replicas": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(status.spec.unwrap().replicas, Some(2));
    assert_eq!(status.status.unwrap().replicas, Some(4));
}

#[tokio::test]
async fn list_pages_with_limit_and_continue_and_filters_by_selectors() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    for i in 0..7 {
        configmap(&format!("cm-{i}"))
            .label("parity", if i % 2 == 0 { "even" } else { "odd" })
            .create(&api)
            .await;
    }
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(3);
    let mut pages = 0;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        assert!(page.metadata.resource_version.is_some());
        names.extend(page.items.iter().map(|c| c.name_any()));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => {
                lp = ListParams::default().limit(3).continue_token(&token)
            }
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("cm-{i}")).collect::<Vec<_>>());
    let even = api
        .list(&ListParams::default().labels("parity=even"))
        .await
        .unwrap();
    assert_eq!(even.items.len(), 4);
    let set = api
        .list(&ListParams::default().labels("parity in (odd),parity!=even"))
        .await
        .unwrap();
    assert_eq!(set.items.len(), 3);
    let one = api
        .list(&ListParams::default().fields("metadata.name=cm-5"))
        .await
        .unwrap();
    assert_eq!(
        one.items.iter().map(|c| c.name_any()).collect::<Vec<_>>(),
        vec!["cm-5"]
    );
    let all_ns: Api<ConfigMap> = Api::all(em.client());
    let elsewhere = all_ns
        .list(&ListParams::default().fields("metadata.namespace=kube-system"))
        .await
        .unwrap();
    assert!(elsewhere.items.is_empty());
}

#[tokio::test]
async fn merge_and_json_patches_apply_and_errors_come_back_as_status() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("p")
        .data("a", "1")
        .data("b", "2")
        .create(&api)
        .await;
    let pp = PatchParams::default();
    let merged = api
        .patch(
            "p",
            &pp,
            &Patch::Merge(json!({"data": {"a": null, "c": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        merged
            .data
            .clone()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>(),
        vec!["b", "c"]
    );
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/b", "value": "20"}]))
            .unwrap();
    let patched = api.patch("p", &pp, &Patch::<()>::Json(ops)).await.unwrap();
    assert_eq!(patched.data.unwrap()["b"], "20");
    let missing = api_error(api.get("nope").await.unwrap_err());
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));
    assert!(
        missing.message.contains("configmaps \"nope\" not found"),
        "{}",
        missing.message
    );
    let elsewhere: Api<ConfigMap> = Api::namespaced(em.client(), "no-such-ns");
    let status = api_error(
        elsewhere
            .create(&PostParams::default(), &configmap("q").build())
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 404);
    let namespaces: Api<Namespace> = Api::all(em.client());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "no-such-ns"}})).unwrap(),
        )
        .await
        .unwrap();
    elsewhere
        .create(&PostParams::default(), &configmap("q").build())
        .await
        .unwrap();
}

#[tokio::test]
async fn discovery_reports_kubernetes_1_33_and_the_builtin_kinds() {
    let em = emulator().await;
    let client = em.client();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "33")
    );
    let discovery = Discovery::new(client).run().await.unwrap();
    let mut found = Vec::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            found.push(format!("{}/{}", ar.group, ar.plural));
            if ar.plural == "deployments" {
                assert!(
                    caps.subresources.iter().any(|(s, _)| s.plural == "scale"),
                    "deployments/scale missing"
                );
            }
        }
    }
    for want in [
        "/configmaps",
        "/namespaces",
        "apps/deployments",
        "coordination.k8s.io/leases",
        "events.k8s.io/events",
        "apiextensions.k8s.io/customresourcedefinitions",
    ] {
        assert!(
            found.iter().any(|f| f == want),
            "{want} not discovered in {found:?}"
        );
    }
}
