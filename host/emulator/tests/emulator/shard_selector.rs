use std::collections::BTreeSet;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;
use kube::{Api, ResourceExt};
use serde_json::Value;
use weir_emulator::{Emulator, EmulatorConfig};

use crate::configmap;

const LOW: &str = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
const HIGH: &str = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

async fn emulator(sharded: bool) -> Emulator {
    Emulator::start(EmulatorConfig {
        sharded_list_watch: sharded,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

/// `text` as a query value (everything but letters and digits percent-encoded).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn get(em: &Emulator, path: &str) -> Result<Value, kube::Error> {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    em.client().request::<Value>(req).await
}

async fn list(em: &Emulator, selector: &str) -> (BTreeSet<String>, Value) {
    let page = get(
        em,
        &format!("{CONFIGMAPS}?shardSelector={}", encode(selector)),
    )
    .await
    .unwrap();
    let names = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    (names, page["metadata"].clone())
}

/// The names a watch with `selector` from `rv` reports (it ends after a second).
async fn watched(em: &Emulator, selector: &str, rv: &str) -> BTreeSet<String> {
    let path = format!(
        "{CONFIGMAPS}?watch=true&resourceVersion={rv}&timeoutSeconds=1&shardSelector={}",
        encode(selector)
    );
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    let events = em.client().request_events::<ConfigMap>(req).await.unwrap();
    events
        .filter_map(|e| async move {
            match e.unwrap() {
                WatchEvent::Added(o) => Some(o.name_any()),
                _ => None,
            }
        })
        .collect()
        .await
}

/// Whether the collection's `GET` in the OpenAPI v3 document lists `shardSelector`.
async fn advertised(em: &Emulator) -> bool {
    let doc = get(em, "/openapi/v3/api/v1").await.unwrap();
    let params = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["get"]["parameters"];
    params
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "shardSelector")
}

#[tokio::test]
async fn a_sharded_emulator_splits_lists_and_watches_by_uid_hash_and_echoes_the_selector() {
    let em = emulator(true).await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let all: BTreeSet<String> = (0..40).map(|i| format!("cm-{i:02}")).collect();
    for name in &all {
        configmap(name).create(&api).await;
    }
    let (low, meta) = list(&em, LOW).await;
    let (high, _) = list(&em, HIGH).await;
    assert!(!low.is_empty() && !high.is_empty(), "{low:?} {high:?}");
    assert!(low.is_disjoint(&high));
    assert_eq!(&low | &high, all);
    assert_eq!(meta["shardInfo"]["selector"], LOW);
    let (both, _) = list(&em, &format!("{LOW} || {HIGH}")).await;
    assert_eq!(both, all);

    // A watch sees only the objects of its range, created after it started.
    let rv = meta["resourceVersion"].as_str().unwrap().to_owned();
    let later: BTreeSet<String> = (0..20).map(|i| format!("later-{i:02}")).collect();
    for name in &later {
        configmap(name).create(&api).await;
    }
    let (w_low, w_high) = (watched(&em, LOW, &rv).await, watched(&em, HIGH, &rv).await);
    assert!(w_low.is_disjoint(&w_high));
    assert_eq!(&w_low | &w_high, later);
    let (now_low, _) = list(&em, LOW).await;
    assert!(w_low.is_subset(&now_low), "the watch and the list agree");
    assert!(advertised(&em).await);
}

#[tokio::test]
async fn without_the_feature_the_parameter_is_ignored_and_not_advertised() {
    let em = emulator(false).await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    for i in 0..10 {
        configmap(&format!("cm-{i}")).create(&api).await;
    }
    let (names, meta) = list(&em, LOW).await;
    assert_eq!(names.len(), 10, "every object: the selector was ignored");
    assert!(meta.get("shardInfo").is_none(), "{meta}");
    assert!(!advertised(&em).await);
}

#[tokio::test]
async fn a_malformed_shard_selector_is_a_bad_request() {
    let em = emulator(true).await;
    let path = format!(
        "{CONFIGMAPS}?shardSelector={}",
        encode("shardRange(object.metadata.name, '0x0', '0x1')")
    );
    match get(&em, &path).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 400, "{status:?}"),
        other => panic!("expected a 400, got {other:?}"),
    }
}
