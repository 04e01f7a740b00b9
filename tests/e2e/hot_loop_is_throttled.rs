//! A plugin that never settles (every answer differs from the last) is flagged as a hot loop:
//! `Reconciled=False reason=HotLoop`, a metric, an Event, and its writes slow down.

use std::time::Duration;

use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds, plugin};

#[tokio::test]
async fn a_never_settling_plugin_is_flagged_and_throttled() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let scenario = plugin("scenario")?;
    env.install_crd(&scenario).await?;
    let host = env.host(&[scenario]).await?;
    let parents = env.api(&kinds::scenario());
    env.create(&kinds::scenario(), "churn", json!({"churn": true}))
        .await?;

    let c = eventually("HotLoop is reported", CONVERGE, || async {
        let c = condition(&parents.get("churn").await.ok()?, "Reconciled")?;
        (c["reason"] == "HotLoop").then_some(c)
    })
    .await?;
    assert_eq!(c["status"], "False");
    assert!(
        host.metrics()
            .encode()
            .contains(r#"weir_hot_loops_total{plugin="scenario"}"#)
    );

    // Unthrottled, this loop writes hundreds of times a second; throttled (500 ms doubling) a handful.
    let before = host.metrics().writes_total();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let during = host.metrics().writes_total() - before;
    assert!(during <= 20, "{during} writes in 2 s while throttled");
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn requeue_now_forever_is_throttled_too() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("scenario").await?;
    env.create(
        &kinds::scenario(),
        "spin",
        json!({"configMaps": ["a"], "requeueNow": true}),
    )
    .await?;
    let parents = env.api(&kinds::scenario());
    eventually("HotLoop is reported", CONVERGE, || async {
        (condition(&parents.get("spin").await.ok()?, "Reconciled")?["reason"] == "HotLoop")
            .then_some(())
    })
    .await?;
    let before = host.metrics().reconciles_total();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let calls = host.metrics().reconciles_total() - before;
    assert!(
        calls <= 20,
        "{calls} reconciles in 2 s; unguarded `now` spins hundreds of times a second"
    );
    host.shutdown().await;
    Ok(())
}
