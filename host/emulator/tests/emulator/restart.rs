use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, WatchEvent};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use weir_emulator::{Emulator, EmulatorConfig, Error, StateError};

use crate::crd::{blog_api, blog_crd};
use crate::{configmap, eventually};

/// An emulator keeping its state in `file`, with fast bookmarks.
async fn with_state_file(file: &Path) -> Emulator {
    Emulator::start(EmulatorConfig {
        bookmark_interval: Duration::from_millis(100),
        state_file: Some(file.to_path_buf()),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

fn blog(name: &str, title: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "weir.dev/v1", "kind": "Blog",
        "metadata": {"name": name}, "spec": {"title": title}}))
    .unwrap()
}

fn rv(obj: &impl ResourceExt) -> u64 {
    obj.resource_version().unwrap().parse().unwrap()
}

#[tokio::test]
async fn objects_crd_kinds_and_the_resource_version_survive_a_restart_through_the_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let em = with_state_file(&file).await;
    let url = em.url();
    let crds: Api<CustomResourceDefinition> = Api::all(em.client());
    crds.create(&PostParams::default(), &blog_crd())
        .await
        .unwrap();
    let blogs = blog_api(em.client());
    let hello = blogs
        .create(&PostParams::default(), &blog("hello", "Hi"))
        .await
        .unwrap();
    let edited = blogs
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"title": "Hello"}})),
        )
        .await
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(em.client());
    let cm = configmap("settings")
        .data("k", "v")
        .create(&configmaps)
        .await;
    let before = em.object_count();
    assert!(
        !file.exists(),
        "the state file is written on restart, not on every write"
    );

    em.restart(Duration::from_millis(200)).await.unwrap();

    assert!(file.exists(), "the restart went through the state file");
    assert_eq!(em.url(), url, "served again on the same address");
    assert_eq!(em.object_count(), before);
    let kept = blogs.get("hello").await.unwrap();
    assert_eq!(kept.uid(), hello.uid());
    assert_eq!(kept.metadata.generation, Some(2));
    assert_eq!(kept.resource_version(), edited.resource_version());
    assert_eq!(kept.data["spec"]["title"], "Hello");
    assert_eq!(
        configmaps.get("settings").await.unwrap().data,
        cm.data,
        "built-in kinds are kept too"
    );
    // The CRD's kind is served again: new Blogs are validated against its schema and stored.
    let later = blogs
        .create(&PostParams::default(), &blog("later", "Later"))
        .await
        .unwrap();
    assert!(
        rv(&later) > rv(&cm),
        "resourceVersion keeps increasing across the restart: {} after {}",
        rv(&later),
        rv(&cm)
    );
    let refused = blogs
        .create(&PostParams::default(), &blog("untitled", ""))
        .await;
    assert!(refused.is_err(), "the CRD schema still applies");
    assert!(
        em.requests()
            .iter()
            .any(|r| r.path.ends_with("/blogs/hello")),
        "the request log survives a restart"
    );

    // A new emulator started from the file serves the same state.
    em.shutdown().await;
    let again = with_state_file(&file).await;
    let blogs = blog_api(again.client());
    assert_eq!(blogs.get("later").await.unwrap().uid(), later.uid());
    assert_eq!(blogs.get("hello").await.unwrap().uid(), hello.uid());
    again.shutdown().await;
}

#[tokio::test]
async fn connections_are_refused_while_a_restart_is_down() {
    let em = Arc::new(crate::emulator().await);
    let addr = em.url().trim_start_matches("http://").to_string();
    let restarting = tokio::spawn({
        let em = em.clone();
        async move { em.restart(Duration::from_secs(2)).await }
    });
    eventually("a refused connection while down", || async {
        match tokio::net::TcpStream::connect(&addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Some(()),
            _ => None,
        }
    })
    .await;
    restarting.await.unwrap().unwrap();
    tokio::net::TcpStream::connect(&addr)
        .await
        .expect("the same address accepts connections after the restart");
    let configmaps: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("after").create(&configmaps).await;
}

#[tokio::test]
async fn a_watcher_re_establishes_after_a_restart_and_sees_later_changes() {
    let dir = tempfile::tempdir().unwrap();
    let em = with_state_file(&dir.path().join("state.json")).await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("a").create(&api).await;
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(api.clone(), watcher::Config::default()).default_backoff(),
    )
    .applied_objects();
    // Errors (refused connections, 410) are the watcher's to recover from.
    let task = tokio::spawn(stream.for_each(|_| async {}));
    let names = |r: &reflector::Store<ConfigMap>| {
        let mut n: Vec<String> = r.state().iter().map(|c| c.name_any()).collect();
        n.sort();
        n
    };
    eventually("the initial list", || async {
        (names(&reader) == ["a"]).then_some(())
    })
    .await;
    let watches_before = em.requests().iter().filter(|r| r.is_watch()).count();

    em.restart(Duration::from_millis(500)).await.unwrap();
    configmap("b").create(&api).await;
    api.delete("a", &DeleteParams::default()).await.unwrap();

    eventually("b and no a after the restart", || async {
        (names(&reader) == ["b"]).then_some(())
    })
    .await;
    let watches_after = em.requests().iter().filter(|r| r.is_watch()).count();
    assert!(
        watches_after > watches_before,
        "the watch was opened again: {watches_before} then {watches_after}"
    );
    task.abort();
}

#[tokio::test]
async fn a_watch_resumed_from_before_a_restart_gets_410() {
    let em = crate::emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let a = configmap("a").create(&api).await;
    let b = configmap("b").create(&api).await;
    em.restart(Duration::ZERO).await.unwrap();

    let wp = kube::api::WatchParams::default().disable_bookmarks();
    let first = api
        .watch(&wp, &a.resource_version().unwrap())
        .await
        .unwrap()
        .boxed()
        .try_next()
        .await
        .unwrap();
    assert!(
        matches!(&first, Some(WatchEvent::Error(e)) if e.code == 410),
        "{first:?}"
    );
    // From the newest resourceVersion nothing is missing: the watch is served.
    let mut stream = api
        .watch(&wp, &b.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    configmap("c").create(&api).await;
    let next = stream.try_next().await.unwrap();
    assert!(
        matches!(&next, Some(WatchEvent::Added(o)) if o.name_any() == "c"),
        "{next:?}"
    );
}

#[tokio::test]
async fn a_state_file_of_another_format_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    std::fs::write(&file, r#"{"format": 99, "objects": {}}"#).unwrap();
    let started = Emulator::start(EmulatorConfig {
        state_file: Some(file.clone()),
        ..EmulatorConfig::default()
    })
    .await;
    assert!(
        matches!(
            &started,
            Err(Error::State(StateError::Format { found: 99, path })) if *path == file
        ),
        "{:?}",
        started.err()
    );
}
