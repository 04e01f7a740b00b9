//! The facade: the three mechanisms wired together, as the controller drives them.

use super::*;

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("default", name)
}

fn config() -> QueueConfig {
    QueueConfig {
        jitter: 0.0,
        ..QueueConfig::default()
    }
}

const SEC: Duration = Duration::from_secs(1);

async fn next_now(q: &Queue) -> Option<ObjectKey> {
    tokio::time::timeout(Duration::from_millis(50), q.next())
        .await
        .ok()
        .flatten()
}

async fn next_within(q: &Queue, wait: Duration) -> Option<ObjectKey> {
    tokio::time::timeout(wait, q.next()).await.ok().flatten()
}

#[tokio::test]
async fn a_key_being_processed_is_not_handed_out_again_until_finished() {
    let q = Queue::new(config());
    q.add(key("a"), Cause::Outside);
    assert_eq!(next_now(&q).await, Some(key("a")));
    q.add(key("a"), Cause::Outside);
    assert_eq!(next_now(&q).await, None, "must not run concurrently");
    q.finish(&key("a"), Finish::Done);
    let again = next_now(&q).await;
    assert_eq!(
        again,
        Some(key("a")),
        "the change seen meanwhile runs afterwards"
    );
}

#[tokio::test]
async fn a_key_whose_reconcile_was_dropped_in_flight_is_handed_out_again() {
    let q = Queue::new(config());
    q.add(key("a"), Cause::Outside);
    let Some(a) = next_now(&q).await else {
        panic!("the added key is handed out");
    };
    let held = q.in_flight(a);
    q.add(key("a"), Cause::Echo);
    assert_eq!(next_now(&q).await, None, "still processing");
    // The worker's task is aborted (its lease lost): the reconcile never reaches `finish`.
    drop(held);
    assert_eq!(
        next_now(&q).await,
        Some(key("a")),
        "released and queued again"
    );
    assert_eq!(next_now(&q).await, None, "once, whatever came meanwhile");
}

#[tokio::test]
async fn a_settled_key_is_left_to_what_its_finish_decided() {
    let q = Queue::new(config());
    q.add(key("a"), Cause::Outside);
    let Some(a) = next_now(&q).await else {
        panic!("the added key is handed out");
    };
    let held = q.in_flight(a);
    q.finish(held.key(), Finish::Done);
    held.settled();
    assert_eq!(next_now(&q).await, None, "converged: not run again");
}

#[tokio::test]
async fn retry_delays_double_from_the_base_and_reset_on_success() {
    let q = Queue::new(config());
    let k = key("a");
    let mut ms = Vec::new();
    for _ in 0..5 {
        q.add(k.clone(), Cause::Outside);
        let _ = q.next().await;
        ms.push(q.finish(&k, Finish::Retry).unwrap_or_default().as_millis());
    }
    assert_eq!(ms, vec![5, 10, 20, 40, 80]);
    assert_eq!(q.failures(&k), 5);
    let _ = q.next().await;
    assert_eq!(q.finish(&k, Finish::Done), None);
    assert_eq!(q.failures(&k), 0);
}

#[tokio::test]
async fn a_delayed_key_falls_due_and_wakes_a_waiting_worker() {
    let q = Queue::new(config());
    q.add_after(key("a"), Duration::from_millis(200));
    assert_eq!(next_now(&q).await, None);
    assert_eq!(next_within(&q, 2 * SEC).await, Some(key("a")));
}

#[tokio::test]
async fn an_outside_change_forgives_the_streak() {
    let q = Queue::new(QueueConfig {
        hot_loop_threshold: 2,
        ..config()
    });
    let k = key("a");
    q.guard(&k, true);
    q.guard(&k, true);
    q.add(k.clone(), Cause::Outside);
    let got = next_now(&q).await;
    assert_eq!(got, Some(k.clone()), "an outside change runs at once");
    assert_eq!(q.guard(&k, true).streak, 1);
}

#[tokio::test]
async fn a_flagged_key_is_throttled_on_echoes_and_immediate_requeues() {
    let q = Queue::new(QueueConfig {
        hot_loop_threshold: 2,
        hot_loop_delay: 60 * SEC,
        ..config()
    });
    let k = key("a");
    q.add(k.clone(), Cause::Outside);
    let _ = q.next().await;
    q.guard(&k, true);
    assert_eq!(q.finish(&k, Finish::Now), Some(Duration::ZERO));
    let _ = next_now(&q).await;
    assert!(q.guard(&k, true).flagged);
    assert_eq!(q.finish(&k, Finish::Now), Some(60 * SEC));
    q.add(k.clone(), Cause::Echo);
    let got = next_now(&q).await;
    assert_eq!(got, None, "echo of our own write must not run at once");
}

#[tokio::test]
async fn an_outside_change_retracted_as_an_echo_leaves_a_flagged_key_throttled() {
    let q = Queue::new(QueueConfig {
        hot_loop_threshold: 1,
        hot_loop_delay: 60 * SEC,
        ..config()
    });
    let k = key("a");
    q.add(k.clone(), Cause::Outside);
    let _ = q.next().await;
    assert!(q.guard(&k, true).flagged);
    q.add(k.clone(), Cause::Outside);
    q.retract_outside(&k);
    assert_eq!(q.finish(&k, Finish::Now), Some(60 * SEC));
    assert_eq!(
        next_now(&q).await,
        None,
        "the echo does not bring it forward"
    );
    assert_eq!(q.hot_loop(&k).streak, 1, "nor reset the streak");
}

#[tokio::test]
async fn immediate_requeues_are_rate_limited_beyond_the_burst() {
    let q = Queue::new(QueueConfig {
        qps: 10.0,
        burst: 2,
        ..config()
    });
    let k = key("a");
    let mut delays = Vec::new();
    for _ in 0..3 {
        q.add(k.clone(), Cause::Outside);
        let _ = next_now(&q).await;
        delays.push(q.finish(&k, Finish::Now).unwrap_or_default());
        let _ = next_now(&q).await;
        q.finish(&k, Finish::Done);
    }
    assert_eq!(delays[..2], [Duration::ZERO; 2]);
    let third = delays[2];
    assert!(
        third >= Duration::from_millis(90),
        "waits for a token: {third:?}"
    );
}

#[tokio::test]
async fn a_key_requeued_after_zero_again_and_again_is_rate_limited() {
    let q = Queue::new(QueueConfig {
        qps: 10.0,
        burst: 2,
        ..config()
    });
    let k = key("a");
    q.add(k.clone(), Cause::Outside);
    let mut delays = Vec::new();
    for _ in 0..3 {
        assert_eq!(next_within(&q, 2 * SEC).await, Some(k.clone()));
        delays.push(
            q.finish(&k, Finish::After(Duration::ZERO))
                .unwrap_or_default(),
        );
    }
    assert_eq!(delays[..2], [Duration::ZERO; 2]);
    let third = delays[2];
    assert!(
        third >= Duration::from_millis(90),
        "waits for a token: {third:?}"
    );
}

#[tokio::test]
async fn a_finalize_answering_again_after_zero_is_flagged_as_a_hot_loop() {
    let q = Queue::new(QueueConfig {
        hot_loop_threshold: 3,
        hot_loop_delay: 60 * SEC,
        ..config()
    });
    let k = key("a");
    q.add(k.clone(), Cause::Outside);
    let mut delays = Vec::new();
    for _ in 0..3 {
        // No `guard` call: the finalize path only reports its requeue.
        assert_eq!(next_now(&q).await, Some(k.clone()));
        delays.push(q.finish(&k, Finish::After(Duration::from_millis(1))));
    }
    let ms = Duration::from_millis(1);
    assert_eq!(delays, vec![Some(ms), Some(ms), Some(60 * SEC)]);
    assert_eq!(
        q.hot_loop(&k),
        HotLoop {
            streak: 3,
            flagged: true
        }
    );
    q.add(k.clone(), Cause::Echo);
    assert_eq!(next_now(&q).await, None, "throttled");
}

#[tokio::test]
async fn a_key_requeued_after_a_minute_is_neither_rate_limited_nor_flagged() {
    let q = Queue::new(QueueConfig {
        qps: 0.001,
        burst: 1,
        hot_loop_threshold: 3,
        ..config()
    });
    let k = key("a");
    for _ in 0..20 {
        assert_eq!(q.finish(&k, Finish::After(60 * SEC)), Some(60 * SEC));
    }
    assert_eq!(
        q.hot_loop(&k),
        HotLoop {
            streak: 0,
            flagged: false
        }
    );
    let now = q.finish(&key("b"), Finish::Now);
    assert_eq!(now, Some(Duration::ZERO), "the one token was never taken");
}

#[tokio::test]
async fn shutdown_wakes_waiting_workers_with_none() {
    let q = std::sync::Arc::new(Queue::new(config()));
    let waiter = tokio::spawn({
        let q = q.clone();
        async move { q.next().await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    q.shutdown();
    let got = tokio::time::timeout(2 * SEC, waiter).await;
    assert!(matches!(got, Ok(Ok(None))));
}

#[tokio::test]
async fn the_echo_of_a_failed_reconciles_own_write_does_not_bring_the_retry_forward() {
    let q = Queue::new(QueueConfig {
        base_delay: 60 * SEC,
        ..config()
    });
    let k = key("a");
    q.add(k.clone(), Cause::Outside);
    let _ = q.next().await;
    q.add(k.clone(), Cause::Echo);
    q.finish(&k, Finish::Retry);
    let got = next_now(&q).await;
    assert_eq!(got, None, "echo during the failing reconcile is dropped");
    q.add(k.clone(), Cause::Echo);
    q.add(k.clone(), Cause::Resync);
    let got = next_now(&q).await;
    assert_eq!(
        got, None,
        "echo or resync while backing off waits for the retry"
    );
    q.add(k.clone(), Cause::Outside);
    let got = next_now(&q).await;
    assert_eq!(got, Some(k), "an outside change retries at once");
}

#[tokio::test]
async fn a_childs_event_for_a_listed_parent_runs_before_the_rest_of_the_list() {
    let q = Queue::new(config());
    for i in 0..100 {
        q.add(key(&format!("p{i}")), Cause::Listed);
    }
    assert_eq!(next_now(&q).await, Some(key("p0")));
    q.finish(&key("p0"), Finish::Done);
    // Its Deployment turned ready: the event that lets it converge.
    q.add(key("p0"), Cause::Outside);
    assert_eq!(
        next_now(&q).await,
        Some(key("p0")),
        "not behind the 99 parents never reconciled"
    );
    assert_eq!(q.depth(), 99);
}

#[tokio::test]
async fn the_echo_of_a_write_runs_before_keys_queued_by_the_resync() {
    let q = Queue::new(config());
    for name in ["r1", "r2", "r3"] {
        q.add(key(name), Cause::Resync);
    }
    q.add(key("w"), Cause::Echo);
    assert_eq!(next_now(&q).await, Some(key("w")));
    assert_eq!(next_now(&q).await, Some(key("r1")));
}

#[tokio::test]
async fn listed_keys_are_not_starved_by_a_stream_of_changes() {
    let q = Queue::new(QueueConfig {
        changes_before_low: 2,
        ..config()
    });
    q.add(key("listed"), Cause::Listed);
    let mut order = Vec::new();
    for i in 0..4 {
        // A change always waits when a key is handed out.
        q.add(key(&format!("c{i}")), Cause::Outside);
        q.add(key(&format!("c{i}b")), Cause::Outside);
        let Some(k) = next_now(&q).await else {
            panic!("keys wait");
        };
        q.finish(&k, Finish::Done);
        order.push(k.name);
    }
    assert_eq!(order, ["c0", "c0b", "listed", "c1"]);
}

#[tokio::test]
async fn a_resync_seen_during_a_reconcile_runs_it_again_behind_the_changes() {
    let q = Queue::new(config());
    q.add(key("a"), Cause::Outside);
    assert_eq!(next_now(&q).await, Some(key("a")));
    q.add(key("a"), Cause::Resync);
    q.finish(&key("a"), Finish::Done);
    q.add(key("b"), Cause::Outside);
    assert_eq!(next_now(&q).await, Some(key("b")));
    assert_eq!(next_now(&q).await, Some(key("a")), "still run again");
}

#[tokio::test]
async fn a_listed_key_forgives_a_hot_loop_like_an_outside_change() {
    let q = Queue::new(QueueConfig {
        hot_loop_threshold: 1,
        hot_loop_delay: 60 * SEC,
        ..config()
    });
    let k = key("a");
    q.add(k.clone(), Cause::Outside);
    let _ = next_now(&q).await;
    assert!(q.guard(&k, true).flagged);
    q.finish(&k, Finish::Done);
    // A relist is a change Weir did not make: it runs at once, as it always did.
    q.add(k.clone(), Cause::Listed);
    assert_eq!(next_now(&q).await, Some(k.clone()));
    assert_eq!(q.guard(&k, true).streak, 1);
}
