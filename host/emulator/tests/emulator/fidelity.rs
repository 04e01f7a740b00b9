//! Smaller things clients notice: one Event store behind two APIs, kubectl's columns, the
//! self-reviews of `kubectl auth`, field selectors on custom resources.

use std::path::Path;

use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

use crate::crd::{blog_api, blog_crd};
use crate::kubectl_bin::Kubectl;
use crate::{api_error, deployment, emulator};

async fn an_event_written_through_either_api_is_read_through_both(kubectl: &Path) {
    let em = emulator().await;
    let events_v1: Api<Event> = Api::default_namespaced(em.client());
    let core: Api<CoreEvent> = Api::default_namespaced(em.client());
    let recorded: Event = serde_json::from_value(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default"},
        "reason": "Reconciled", "note": "applied 3 children", "type": "Normal",
        "action": "Reconcile", "reportingController": "weir.dev/host", "reportingInstance": "host-0"
    }))
    .unwrap();
    events_v1
        .create(&PostParams::default(), &recorded)
        .await
        .unwrap();

    let seen = core.get("web.1").await.unwrap();
    assert_eq!(seen.message.as_deref(), Some("applied 3 children"));
    assert_eq!(seen.involved_object.name.as_deref(), Some("web"));
    assert_eq!(seen.reporting_component.as_deref(), Some("weir.dev/host"));

    let written: CoreEvent = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.2"},
        "involvedObject": {"kind": "Deployment", "name": "web", "namespace": "default"},
        "reason": "Scaled", "message": "scaled to 2", "type": "Normal", "count": 1,
        "source": {"component": "tester"}
    }))
    .unwrap();
    core.create(&PostParams::default(), &written).await.unwrap();
    let as_v1 = events_v1.get("web.2").await.unwrap();
    assert_eq!(as_v1.note.as_deref(), Some("scaled to 2"));
    assert_eq!(as_v1.regarding.and_then(|r| r.name).as_deref(), Some("web"));
    assert_eq!(
        events_v1
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );

    let k = Kubectl::with_binary(&em, kubectl);
    let out = k.ok(&["get", "events"]).await;
    let header = out.lines().next().unwrap_or("");
    assert!(header.starts_with("LAST SEEN"), "{out}");
    for column in ["TYPE", "REASON", "OBJECT", "MESSAGE"] {
        assert!(header.contains(column), "{out}");
    }
    assert!(
        out.contains("deployment/web") && out.contains("applied 3 children"),
        "{out}"
    );
    assert!(out.contains("scaled to 2"), "{out}");
}

async fn kubectl_prints_service_and_deployment_columns_as_a_cluster_does(kubectl: &Path) {
    let em = emulator().await;
    let deployments = Api::default_namespaced(em.client());
    deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .unwrap();
    let k = Kubectl::with_binary(&em, kubectl);
    k.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"])
        .await;

    let svc = k.ok(&["get", "svc"]).await;
    let header: Vec<&str> = svc.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    let row: Vec<&str> = svc.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..2], ["web", "ClusterIP"]);
    assert!(row[2].starts_with("10.96."), "{svc}");
    assert_eq!(row[3..5], ["<none>", "80/TCP"]);

    let wide = k.ok(&["get", "deploy", "-o", "wide"]).await;
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    let row: Vec<&str> = wide.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["web", "0/2", "0", "0"]);
    assert_eq!(row[5..], ["app", "nginx:1", "app=web"]);
}

async fn kubectl_auth_can_i_and_whoami_answer_for_an_emulator_without_authorization(
    kubectl: &Path,
) {
    let em = emulator().await;
    let k = Kubectl::with_binary(&em, kubectl);
    assert_eq!(
        k.ok(&["auth", "can-i", "create", "deployments"])
            .await
            .trim(),
        "yes"
    );
    let list = k.ok(&["auth", "can-i", "--list"]).await;
    assert!(list.contains("*.*"), "{list}");
    let who = k.ok(&["auth", "whoami"]).await;
    assert!(who.contains("system:admin"), "{who}");
}

#[tokio::test]
async fn custom_resources_refuse_field_selectors_other_than_name_and_namespace() {
    let em = emulator().await;
    let crds = Api::all(em.client());
    crds.create(&PostParams::default(), &blog_crd())
        .await
        .unwrap();
    let blogs = blog_api(em.client());
    let by_name = ListParams::default().fields("metadata.name=first");
    assert!(blogs.list(&by_name).await.unwrap().items.is_empty());
    let by_spec = ListParams::default().fields("spec.title=x");
    let status = api_error(blogs.list(&by_spec).await.unwrap_err());
    assert_eq!(status.code, 400);
    assert!(
        status
            .message
            .contains("field label not supported: spec.title"),
        "{}",
        status.message
    );
}
each_kubectl!(
    an_event_written_through_either_api_is_read_through_both,
    kubectl_prints_service_and_deployment_columns_as_a_cluster_does,
    kubectl_auth_can_i_and_whoami_answer_for_an_emulator_without_authorization,
);
