//! The write-time leadership gate: a fenced client sends no write after the fence's deadline,
//! not even one that was already waiting in the client's rate limit; reads always pass.

use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, PostParams};
use weir::client::ClientLimits;
use weir::fence::Fence;
use weir_e2e::TestEnv;

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn no_write_leaves_a_fenced_client_after_its_deadline() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(()); // The request log is the emulator's.
    };
    // One token (the first write), then one every two seconds: the next write waits.
    let limits = ClientLimits { qps: 0.5, burst: 1 };
    let fence = Fence::closed();
    let client = fence.client(&env.client_as("weir-e2e/fenced", limits).await?);
    let cms: Api<ConfigMap> = Api::namespaced(client, &env.namespace);
    let writes = || -> Vec<String> {
        emulator
            .requests()
            .iter()
            .filter(|r| r.is_write() && r.user_agent.as_deref() == Some("weir-e2e/fenced"))
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    };

    let refused = cms.create(&PostParams::default(), &config_map("a")).await;
    assert!(
        matches!(&refused, Err(kube::Error::Service(e)) if e.to_string().contains("withheld")),
        "a closed fence withholds the write: {refused:?}"
    );
    assert_eq!(
        writes(),
        Vec::<String>::new(),
        "the withheld write never reached the server"
    );
    fence.open_until(SystemTime::now() + Duration::from_millis(600));
    cms.create(&PostParams::default(), &config_map("b")).await?;
    // The token is spent: this write waits ~2 s in the rate limit, past the deadline.
    let late = cms.create(&PostParams::default(), &config_map("c")).await;
    assert!(
        matches!(&late, Err(kube::Error::Service(e)) if e.to_string().contains("withheld")),
        "a write still waiting at the deadline is dropped: {late:?}"
    );
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let writes = writes();
    assert_eq!(
        writes.len(),
        1,
        "only the write before the deadline: {writes:?}"
    );
    // Reads are never fenced (a standby keeps its caches warm).
    fence.close();
    let names: Vec<String> = cms
        .list(&ListParams::default())
        .await?
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect();
    assert!(
        names.contains(&"b".to_owned()) && !names.contains(&"c".to_owned()),
        "{names:?}"
    );
    Ok(())
}
