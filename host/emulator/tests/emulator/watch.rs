use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, WatchEvent, WatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::{configmap, emulator};

fn describe(ev: &WatchEvent<ConfigMap>) -> String {
    match ev {
        WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
        WatchEvent::Bookmark(_) => "BOOKMARK".into(),
        WatchEvent::Error(e) => format!("ERROR {}", e.code),
    }
}

#[tokio::test]
async fn watch_resumes_after_the_given_resource_version() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let a = configmap("a").create(&api).await;
    configmap("b").create(&api).await;
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    api.delete("b", &Default::default()).await.unwrap();
    let wp = WatchParams::default().disable_bookmarks();
    let stream = api
        .watch(&wp, &a.resource_version().unwrap())
        .await
        .unwrap();
    let events: Vec<String> = stream
        .take(3)
        .map(|e| describe(&e.unwrap()))
        .collect()
        .await;
    assert_eq!(events, vec!["ADDED b", "MODIFIED a", "DELETED b"]);
}

#[tokio::test]
async fn a_compacted_resource_version_gets_an_in_stream_410() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let a = configmap("a").create(&api).await;
    configmap("b").create(&api).await;
    em.compact();
    let mut stream = api
        .watch(&WatchParams::default(), &a.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    let first = stream.try_next().await.unwrap().unwrap();
    assert_eq!(describe(&first), "ERROR 410");
    let log = em.requests();
    let watch = log.iter().rev().find(|r| r.is_watch()).unwrap();
    assert_eq!(
        watch.status, 200,
        "410 must be in-stream, not an HTTP status"
    );
}

#[tokio::test]
async fn bookmarks_carry_the_latest_resource_version() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let a = configmap("a").create(&api).await;
    let other: Api<ConfigMap> = Api::namespaced(em.client(), "kube-system");
    let elsewhere = configmap("z").create(&other).await;
    let mut stream = api
        .watch(&WatchParams::default(), &a.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    let ev = stream.try_next().await.unwrap().unwrap();
    match ev {
        WatchEvent::Bookmark(b) => assert_eq!(
            Some(b.metadata.resource_version),
            elsewhere.resource_version()
        ),
        other => panic!("expected a bookmark, got {}", describe(&other)),
    }
}

#[tokio::test]
async fn streaming_list_sends_current_objects_then_the_initial_events_end_bookmark() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("a").label("pick", "yes").create(&api).await;
    configmap("b").create(&api).await;
    let wp = WatchParams::streaming_lists().labels("pick=yes");
    let mut stream = api.watch(&wp, "").await.unwrap().boxed();
    assert_eq!(
        describe(&stream.try_next().await.unwrap().unwrap()),
        "ADDED a"
    );
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            )
        }
        other => panic!(
            "expected the initial-events-end bookmark, got {}",
            describe(&other)
        ),
    }
    configmap("c").create(&api).await;
    configmap("d").label("pick", "yes").create(&api).await;
    let next = loop {
        let ev = stream.try_next().await.unwrap().unwrap();
        if !matches!(ev, WatchEvent::Bookmark(_)) {
            break ev;
        }
    };
    assert_eq!(describe(&next), "ADDED d");
}

#[tokio::test]
async fn drop_watches_ends_open_streams() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let stream = api
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap();
    em.drop_watches();
    let rest: Vec<_> = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stream.collect::<Vec<_>>(),
    )
    .await
    .expect("the stream must end after drop_watches");
    assert!(rest.is_empty());
}

#[tokio::test]
async fn a_label_change_moves_an_object_into_and_out_of_a_selector_watch() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let a = configmap("a").create(&api).await;
    let wp = WatchParams::default()
        .labels("pick=yes")
        .disable_bookmarks();
    let mut stream = api
        .watch(&wp, &a.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    let label = |v: Option<&str>| Patch::Merge(json!({"metadata": {"labels": {"pick": v}}}));
    api.patch("a", &PatchParams::default(), &label(Some("yes")))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    api.patch("a", &PatchParams::default(), &label(None))
        .await
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(describe(&stream.try_next().await.unwrap().unwrap()));
    }
    assert_eq!(seen, vec!["ADDED a", "MODIFIED a", "DELETED a"]);
}
