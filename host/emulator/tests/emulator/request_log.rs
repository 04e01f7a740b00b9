//! The request log: bounded by `EmulatorConfig::request_log`, read from a cursor.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use weir_emulator::{Emulator, EmulatorConfig};

#[tokio::test]
async fn the_request_log_keeps_the_latest_requests_and_a_cursor_reads_only_new_ones() {
    let em = Emulator::start(EmulatorConfig {
        request_log: 3,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let get = |name: &'static str| {
        let api = api.clone();
        async move { api.get_opt(name).await.unwrap() }
    };
    let mut cursor = em.request_cursor();
    for name in ["a", "b", "c", "d", "e"] {
        get(name).await;
    }
    let kept: Vec<String> = em.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        kept,
        ["c", "d", "e"].map(|n| format!("/api/v1/namespaces/default/configmaps/{n}"))
    );
    assert_eq!(
        em.requests_since(&mut cursor).len(),
        3,
        "a reader that fell behind gets what is kept"
    );
    get("f").await;
    let new: Vec<String> = em
        .requests_since(&mut cursor)
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(new, ["/api/v1/namespaces/default/configmaps/f"]);
    assert!(em.requests_since(&mut cursor).is_empty());
}
