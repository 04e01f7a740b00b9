//! A failing plugin: retries come at growing intervals, the parent shows `Reconciled=False`
//! with the plugin's message, and a Warning Event is recorded.

use std::time::{Duration, Instant};

use k8s_openapi::api::events::v1::Event;
use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds};

#[tokio::test]
async fn retries_of_a_transient_failure_come_at_growing_intervals() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("scenario").await?;
    env.create(
        &kinds::scenario(),
        "broken",
        json!({"fail": "transient", "message": "database not ready"}),
    )
    .await?;

    // Attempts are counted by the host's reconcile counter; the base delay is 50 ms.
    let mut seen = Vec::new();
    let mut last = host.metrics().reconciles_total();
    let deadline = Instant::now() + CONVERGE;
    while seen.len() < 7 && Instant::now() < deadline {
        let now = host.metrics().reconciles_total();
        if now != last {
            seen.push(Instant::now());
            last = now;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(seen.len(), 7, "the failing parent is retried");
    // Each retry waits at least its backoff (50 ms doubling, ±10 % jitter); load can only add.
    let gaps: Vec<Duration> = seen.windows(2).map(|w| w[1] - w[0]).collect();
    for (i, gap) in gaps.iter().enumerate() {
        let floor = Duration::from_millis(50 * 2u64.pow(i as u32)).mul_f64(0.85);
        assert!(
            *gap >= floor,
            "retry {i} came after {gap:?}, before its backoff {floor:?}: {gaps:?}"
        );
    }
    assert!(
        gaps[gaps.len() - 1] > gaps[0] * 4,
        "intervals grow: {gaps:?}"
    );

    let parents = env.api(&kinds::scenario());
    let reconciled = eventually("Reconciled=False", CONVERGE, || async {
        condition(&parents.get("broken").await.ok()?, "Reconciled")
    })
    .await?;
    assert_eq!(reconciled["status"], "False");
    assert_eq!(reconciled["reason"], "TransientError");
    assert!(
        reconciled["message"]
            .as_str()
            .unwrap_or_default()
            .contains("database not ready"),
        "{reconciled}"
    );
    let events = env.typed::<Event>();
    let warning = eventually("a Warning Event", CONVERGE, || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("broken")
        })
    })
    .await?;
    assert!(
        warning
            .note
            .unwrap_or_default()
            .contains("database not ready")
    );

    // A fix resets the backoff: the parent converges promptly.
    env.patch_spec(
        &kinds::scenario(),
        "broken",
        json!({"fail": null, "configMaps": ["ok"]}),
    )
    .await?;
    weir_e2e::wait_ready(&parents, "broken").await?;
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_permanent_failure_is_reported_and_not_retried() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("scenario").await?;
    env.create(
        &kinds::scenario(),
        "invalid",
        json!({"fail": "permanent", "message": "spec.title is required"}),
    )
    .await?;
    let parents = env.api(&kinds::scenario());
    let c = eventually("Reconciled=False", CONVERGE, || async {
        condition(&parents.get("invalid").await.ok()?, "Reconciled")
    })
    .await?;
    assert_eq!(c["reason"], "PermanentError");
    let after_report = host.metrics().reconciles_total();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        host.metrics().reconciles_total() <= after_report + 1,
        "a permanent error waits for a change"
    );
    host.shutdown().await;
    Ok(())
}
