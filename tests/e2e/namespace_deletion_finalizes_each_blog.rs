//! Deleting a namespace that holds Blogs, as a cluster deletes it: the namespace is
//! `Terminating` and refuses new content, its controller deletes what it holds (the Blogs
//! among it), the host runs each Blog's finalize and releases its finalizer, the namespace's
//! conditions say what still holds it, and it goes once nothing does; nothing a Blog owned is
//! left anywhere. Written for the emulator and for a cluster (`KUBECONFIG`), whose namespace
//! controller starts some seconds after the delete and looks again every few seconds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;
use weir::plugin::ResourceKind;
use weir_e2e::plugin_log::lines_of;
use weir_e2e::{TestEnv, eventually, kinds, wait_ready};

/// Names no other scenario gives its Blogs (the plugin's log lines are read by name).
const BLOGS: [&str; 3] = ["doomed-ns-a", "doomed-ns-b", "doomed-ns-c"];

/// The Blog plugin's finalizer, which the host holds until the Blog's finalize completes.
const BLOG_FINALIZER: &str = "weir.dev/blog-cleanup";

/// The test's own finalizer on one ConfigMap, holding the namespace until the test lets go.
const HOLD: &str = "e2e.weir.dev/hold";

/// How long a step of the namespace's deletion may take: a cluster's namespace controller waits
/// 5 s before its first pass and up to 15 s between passes while content remains.
const NAMESPACE_STEP: Duration = Duration::from_secs(120);

/// The states the Blogs took, in order (`true`: deleted), as a watch saw them.
type States = Arc<Mutex<Vec<(bool, DynamicObject)>>>;

/// Every state the namespace's Blogs take from now on, and the task following them.
fn follow(blogs: Api<DynamicObject>) -> (States, tokio::task::JoinHandle<()>) {
    let states = Arc::new(Mutex::new(Vec::new()));
    let seen = states.clone();
    let task = tokio::spawn(async move {
        let mut events = watcher(blogs, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let state = match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => (false, o),
                Ok(watcher::Event::Delete(o)) => (true, o),
                _ => continue,
            };
            seen.lock().unwrap_or_else(|e| e.into_inner()).push(state);
        }
    });
    (states, task)
}

/// The status and message of the namespace's condition `kind`.
fn condition(ns: &Namespace, kind: &str) -> Option<(String, String)> {
    ns.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.message.clone().unwrap_or_default()))
}

/// Objects of `kind` anywhere in the cluster that a Blog with one of `uids` owns (by the label
/// the host puts on every child), as `namespace/name`.
async fn owned_anywhere(
    client: &Client,
    kind: &ResourceKind,
    uids: &[String],
) -> Result<Vec<String>> {
    let selector = format!("weir.dev/parent-uid in ({})", uids.join(","));
    let list = Api::<DynamicObject>::all_with(client.clone(), &kind.api_resource())
        .list(&ListParams::default().labels(&selector))
        .await?;
    Ok(list
        .items
        .iter()
        .map(|o| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()))
        .collect())
}

#[tokio::test]
async fn deleting_a_namespace_finalizes_each_blog_and_leaves_nothing_behind() -> Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("blog").await?;
    let blogs = env.api(&kinds::blog());
    for name in BLOGS {
        env.create(&kinds::blog(), name, json!({"title": name, "replicas": 1}))
            .await?;
    }
    let mut uids = Vec::new();
    for name in BLOGS {
        let blog = wait_ready(&blogs, name).await?;
        ensure!(
            blog.finalizers() == [BLOG_FINALIZER],
            "{name} carries the host's finalizer"
        );
        uids.push(blog.uid().context("a Blog without a uid")?);
    }
    let (states, following) = follow(blogs.clone());
    eventually("the Blogs are followed", NAMESPACE_STEP, || async {
        let seen = states.lock().unwrap_or_else(|e| e.into_inner()).len();
        (seen >= BLOGS.len()).then_some(())
    })
    .await?;
    let configmaps = env.typed::<ConfigMap>();
    let hold: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "hold", "finalizers": [HOLD]},
    }))?;
    configmaps.create(&PostParams::default(), &hold).await?;

    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .delete(&env.namespace, &DeleteParams::default())
        .await?;
    let terminating = namespaces.get(&env.namespace).await?;
    ensure!(terminating.metadata.deletion_timestamp.is_some());
    ensure!(
        terminating.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating"),
        "the namespace is Terminating: {:?}",
        terminating.status
    );

    let late: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "late"}}))?;
    let status = match configmaps.create(&PostParams::default(), &late).await {
        Err(kube::Error::Api(status)) => status,
        other => anyhow::bail!("a terminating namespace took new content: {other:?}"),
    };
    ensure!(
        status.code == 403 && status.reason == "Forbidden",
        "{status:?}"
    );
    let why = format!(
        "unable to create new content in namespace {} because it is being terminated",
        env.namespace
    );
    ensure!(status.message.contains(&why), "{}", status.message);

    eventually(
        "every Blog is finalized and gone",
        NAMESPACE_STEP,
        || async {
            blogs
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .is_empty()
                .then_some(())
        },
    )
    .await?;
    let held = eventually(
        "the namespace says what still holds it",
        NAMESPACE_STEP,
        || async {
            let ns = namespaces.get(&env.namespace).await.ok()?;
            let content = condition(&ns, "NamespaceContentRemaining")?;
            let finalizers = condition(&ns, "NamespaceFinalizersRemaining")?;
            (content
                == (
                    "True".into(),
                    "Some resources are remaining: configmaps. has 1 resource instances".into(),
                ))
                .then_some((content, finalizers))
        },
    )
    .await?;
    ensure!(
        held.1
            == (
                "True".to_string(),
                format!(
                    "Some content in the namespace has finalizers remaining: {HOLD} in 1 resource instances"
                )
            ),
        "{held:?}"
    );
    ensure!(
        configmaps
            .get("hold")
            .await?
            .metadata
            .deletion_timestamp
            .is_some(),
        "the controller deleted the held ConfigMap too"
    );

    let release = json!({"metadata": {"finalizers": null}});
    configmaps
        .patch("hold", &PatchParams::default(), &Patch::Merge(&release))
        .await?;
    eventually("the namespace is gone", NAMESPACE_STEP, || async {
        namespaces
            .get_opt(&env.namespace)
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await?;
    following.abort();

    let states = states.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let finalized = lines_of("blog");
    for name in BLOGS {
        let mine: Vec<&(bool, DynamicObject)> = states
            .iter()
            .filter(|(_, o)| o.name_any() == name)
            .collect();
        ensure!(
            mine.iter().any(|(gone, o)| !gone
                && o.metadata.deletion_timestamp.is_some()
                && o.finalizers() == [BLOG_FINALIZER]),
            "{name} was held by the host's finalizer while being deleted: {mine:?}"
        );
        ensure!(
            mine.last().is_some_and(|(gone, _)| *gone),
            "{name} was deleted last: {mine:?}"
        );
        ensure!(
            finalized
                .iter()
                .any(|l| l.printed.contains(&format!("Blog {name} deleted"))),
            "{name}'s finalize ran"
        );
    }
    let client = &env.client;
    let orphans = [
        owned_anywhere(client, &kinds::config_map(), &uids).await?,
        owned_anywhere(client, &kinds::deployment(), &uids).await?,
        owned_anywhere(client, &kinds::service(), &uids).await?,
    ];
    ensure!(
        orphans.iter().all(Vec::is_empty),
        "left behind: {orphans:?}"
    );
    let replicasets = env
        .typed::<ReplicaSet>()
        .list(&ListParams::default())
        .await?;
    let pods = env.typed::<Pod>().list(&ListParams::default()).await?;
    ensure!(
        replicasets.items.is_empty() && pods.items.is_empty(),
        "ReplicaSets and Pods left in the deleted namespace"
    );
    host.shutdown().await;
    Ok(())
}
