use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, reflector, watcher};

use weir_emulator::{Emulator, EmulatorConfig};

use crate::{configmap, emulator, eventually};

#[tokio::test]
async fn reflector_converges_after_dropped_streams_and_compaction() {
    // Slow bookmarks so the watcher's last resourceVersion stays behind the compaction point.
    let config = EmulatorConfig {
        bookmark_interval: Duration::from_secs(3600),
        ..EmulatorConfig::default()
    };
    let em = Emulator::start(config).await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("a").create(&api).await;
    let (reader, writer) = reflector::store();
    let stream =
        reflector(writer, watcher(api.clone(), watcher::Config::default())).applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    let names = |r: &reflector::Store<ConfigMap>| {
        let mut n: Vec<String> = r
            .state()
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect();
        n.sort();
        n
    };
    eventually("initial list", || async {
        (names(&reader) == ["a"]).then_some(())
    })
    .await;

    em.drop_watches();
    configmap("b").create(&api).await;
    eventually("b after a dropped stream", || async {
        (names(&reader) == ["a", "b"]).then_some(())
    })
    .await;

    let elsewhere: Api<ConfigMap> = Api::namespaced(em.client(), "kube-system");
    configmap("unseen").create(&elsewhere).await;
    em.compact();
    em.drop_watches();
    configmap("c").create(&api).await;
    api.delete("a", &Default::default()).await.unwrap();
    eventually("c and no a after compaction", || async {
        (names(&reader) == ["b", "c"]).then_some(())
    })
    .await;
    let lists = em
        .requests()
        .iter()
        .filter(|r| {
            r.method == http::Method::GET && !r.is_watch() && r.path.ends_with("/configmaps")
        })
        .count();
    assert!(
        lists >= 2,
        "the 410 must have forced a re-list, saw {lists} lists"
    );
    task.abort();
}

#[tokio::test]
async fn metadata_watcher_receives_partial_object_metadata() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("m")
        .label("x", "y")
        .data("secret", "big")
        .create(&api)
        .await;
    let meta: Api<PartialObjectMeta<ConfigMap>> = Api::default_namespaced(em.client());
    let mut stream = watcher(meta, watcher::Config::default())
        .applied_objects()
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("m"));
    assert_eq!(first.metadata.labels.unwrap()["x"], "y");
}
