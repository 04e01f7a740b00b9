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

    // Attempts are counted by the host's reconcile counter; the base delay is 50 ms. The counter
    // is polled, so each attempt is known only to lie between the last poll that did not see it
    // and the first that did; under load a poll can come late, so each gap is checked by its
    // bounds, not by when the polls happened to notice it.
    let mut seen: Vec<Window> = Vec::new();
    let mut last = host.metrics().reconciles_total();
    let mut unseen_since = Instant::now();
    let deadline = Instant::now() + CONVERGE;
    while seen.len() < 7 && Instant::now() < deadline {
        let before = Instant::now();
        let now = host.metrics().reconciles_total();
        if now != last {
            seen.push(Window {
                after: unseen_since,
                by: Instant::now(),
            });
            last = now;
        }
        unseen_since = before;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(seen.len(), 7, "the failing parent is retried");
    // Each retry waits at least its backoff (50 ms doubling, ±10 % jitter): a gap fails only when
    // even its longest reading (the later attempt seen as late, the earlier as early, as the
    // polls allow) is shorter.
    let gaps: Vec<(Duration, Duration)> = seen
        .windows(2)
        .map(|w| {
            (
                w[1].after.saturating_duration_since(w[0].by),
                w[1].by - w[0].after,
            )
        })
        .collect();
    for (i, (_, longest)) in gaps.iter().enumerate() {
        let floor = Duration::from_millis(50 * 2u64.pow(i as u32)).mul_f64(0.85);
        assert!(
            *longest >= floor,
            "retry {i} came within {longest:?}, before its backoff {floor:?}: (shortest, longest) {gaps:?}"
        );
    }
    let (first_shortest, _) = gaps[0];
    let (_, last_longest) = gaps[gaps.len() - 1];
    assert!(
        last_longest > first_shortest * 4,
        "intervals grow: (shortest, longest) {gaps:?}"
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

/// When the polls saw one attempt of the reconcile counter: after the last poll that did not see
/// it began, and by the end of the first that did.
struct Window {
    after: Instant,
    by: Instant,
}
