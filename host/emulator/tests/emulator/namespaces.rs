//! Namespace deletion as a cluster does it: `Terminating`, new content refused, the content
//! deleted kind by kind (Pods first), finalizers honoured with the conditions that name them,
//! `/finalize`, and the namespace gone once empty.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

use crate::{api_error, configmap, emulator, eventually};

async fn namespace(em: &weir_emulator::Emulator, name: &str) -> Api<Namespace> {
    let namespaces: Api<Namespace> = Api::all(em.client());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    namespaces
}

/// `type → (status, reason, message)` of a namespace's conditions, in their order.
fn conditions(ns: &Namespace) -> Vec<(String, String, String, String)> {
    ns.status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            (
                c.type_,
                c.status,
                c.reason.unwrap_or_default(),
                c.message.unwrap_or_default(),
            )
        })
        .collect()
}

fn release() -> Patch<Value> {
    Patch::Merge(json!({"metadata": {"finalizers": null}}))
}

#[tokio::test]
async fn a_deleted_namespace_terminates_refuses_content_and_goes_once_its_finalizers_are_released()
{
    let em = emulator().await;
    let namespaces = namespace(&em, "team").await;
    let created = namespaces.get("team").await.unwrap();
    assert_eq!(
        created.spec.unwrap().finalizers,
        Some(vec!["kubernetes".to_string()])
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(em.client(), "team");
    configmap("held")
        .finalizer("weir.dev/hold")
        .create(&configmaps)
        .await;
    configmap("free").create(&configmaps).await;

    let answered = namespaces
        .delete("team", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("a namespace with the kubernetes finalizer is answered, not gone");
    assert_eq!(
        answered.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    assert!(answered.metadata.deletion_timestamp.is_some());

    let refused = api_error(
        configmaps
            .create(&PostParams::default(), &configmap("late").build())
            .await
            .unwrap_err(),
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    let cause = &refused.details.unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("NamespaceTerminating", "metadata.namespace")
    );

    let held = eventually(
        "the controller reports what holds the namespace",
        || async {
            let ns = namespaces.get("team").await.unwrap();
            let c = conditions(&ns);
            (c.len() == 5 && c[3].1 == "True").then_some(c)
        },
    )
    .await;
    let expected = [
        (
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        (
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        (
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: configmaps. has 1 resource instances",
        ),
        (
            "NamespaceFinalizersRemaining",
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: weir.dev/hold in 1 resource instances",
        ),
    ];
    let held: Vec<(&str, &str, &str, &str)> = held
        .iter()
        .map(|(a, b, c, d)| (a.as_str(), b.as_str(), c.as_str(), d.as_str()))
        .collect();
    assert_eq!(held, expected);
    assert!(configmaps.get_opt("free").await.unwrap().is_none());
    let waiting = configmaps.get("held").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());

    // Deleting it again answers the terminating namespace, as kube-apiserver does.
    let again = namespaces
        .delete("team", &DeleteParams::default())
        .await
        .unwrap();
    assert!(again.is_left());

    configmaps
        .patch("held", &PatchParams::default(), &release())
        .await
        .unwrap();
    eventually("the namespace is gone", || async {
        namespaces
            .get_opt("team")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn pods_go_first_and_nothing_else_is_deleted_while_one_remains() {
    let em = emulator().await;
    let namespaces = namespace(&em, "ordered").await;
    let pods: Api<Pod> = Api::namespaced(em.client(), "ordered");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "lingering", "finalizers": ["weir.dev/drain"]},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(em.client(), "ordered");
    configmap("settings").create(&configmaps).await;

    namespaces
        .delete("ordered", &DeleteParams::default())
        .await
        .unwrap();
    let c = eventually("the controller reports the Pod", || async {
        let ns = namespaces.get("ordered").await.unwrap();
        let c = conditions(&ns);
        (c.len() == 5).then_some(c)
    })
    .await;
    assert_eq!(
        c[3].3,
        "Some resources are remaining: pods. has 1 resource instances"
    );
    assert_eq!(
        c[4].3,
        "Some content in the namespace has finalizers remaining: weir.dev/drain in 1 resource instances"
    );
    let settings = configmaps.get("settings").await.unwrap();
    assert!(
        settings.metadata.deletion_timestamp.is_none(),
        "the ConfigMap waits until no Pod remains"
    );

    pods.patch("lingering", &PatchParams::default(), &release())
        .await
        .unwrap();
    eventually("the namespace is gone", || async {
        namespaces
            .get_opt("ordered")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(configmaps.get_opt("settings").await.unwrap().is_none());
}

#[tokio::test]
async fn watchers_see_an_empty_namespace_terminate_before_it_goes() {
    let em = emulator().await;
    let namespaces = namespace(&em, "brief").await;
    let config = watcher::Config::default().fields("metadata.name=brief");
    let states = tokio::spawn(
        watcher(namespaces.clone(), config)
            .take_while(|e| std::future::ready(!matches!(e, Ok(watcher::Event::Delete(_)))))
            .try_filter_map(|e| async move {
                Ok(match e {
                    watcher::Event::Apply(ns) | watcher::Event::InitApply(ns) => Some(ns),
                    _ => None,
                })
            })
            .try_collect::<Vec<Namespace>>(),
    );
    eventually("the watch is open", || async {
        em.requests()
            .iter()
            .any(|r| r.is_watch() && r.path == "/api/v1/namespaces")
            .then_some(())
    })
    .await;
    namespaces
        .delete("brief", &DeleteParams::default())
        .await
        .unwrap();
    let states = tokio::time::timeout(std::time::Duration::from_secs(10), states)
        .await
        .expect("the namespace goes")
        .unwrap()
        .unwrap();
    let phases: Vec<Option<String>> = states
        .iter()
        .map(|ns| ns.status.as_ref().and_then(|s| s.phase.clone()))
        .collect();
    assert_eq!(phases.first().cloned().flatten().as_deref(), Some("Active"));
    assert!(
        phases
            .iter()
            .skip(1)
            .all(|p| p.as_deref() == Some("Terminating"))
            && phases.len() >= 2,
        "{phases:?}"
    );
    let last = conditions(states.last().unwrap());
    assert!(
        last.len() == 5 && last.iter().all(|c| c.1 == "False"),
        "the controller reported nothing left before the namespace went: {last:?}"
    );
}

#[tokio::test]
async fn spec_finalizers_change_only_through_finalize() {
    let em = emulator().await;
    let namespaces = namespace(&em, "stuck").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(em.client(), "stuck");
    configmap("held")
        .finalizer("weir.dev/hold")
        .create(&configmaps)
        .await;
    let cleared = Patch::Merge(json!({"spec": {"finalizers": []}}));
    let patched = namespaces
        .patch("stuck", &PatchParams::default(), &cleared)
        .await
        .unwrap();
    assert_eq!(
        patched.spec.unwrap().finalizers,
        Some(vec!["kubernetes".to_string()]),
        "an update keeps spec.finalizers"
    );
    namespaces
        .delete("stuck", &DeleteParams::default())
        .await
        .unwrap();

    // What people do to a namespace stuck Terminating: PUT /finalize without `kubernetes`.
    let mut ns = namespaces.get("stuck").await.unwrap();
    ns.spec = Some(Default::default());
    ns.metadata.resource_version = None;
    let finalized = namespaces
        .replace_subresource("finalize", "stuck", &PostParams::default(), &ns)
        .await
        .unwrap();
    assert_eq!(
        finalized.spec.unwrap().finalizers.unwrap_or_default(),
        Vec::<String>::new()
    );
    assert!(namespaces.get_opt("stuck").await.unwrap().is_none());
}
