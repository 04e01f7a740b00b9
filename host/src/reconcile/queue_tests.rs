use std::time::Duration;

use super::*;

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("default", name)
}

fn no_jitter() -> QueueConfig {
    QueueConfig {
        jitter: 0.0,
        ..QueueConfig::default()
    }
}

async fn next_now(q: &Queue) -> Option<ObjectKey> {
    tokio::time::timeout(Duration::from_millis(50), q.next())
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn duplicate_keys_collapse_into_one_entry() {
    let q = Queue::new(no_jitter());
    for _ in 0..100 {
        q.add(key("a"), Cause::Outside);
    }
    q.add(key("b"), Cause::Outside);
    assert_eq!(q.depth(), 2);
    assert_eq!(next_now(&q).await, Some(key("a")));
    assert_eq!(next_now(&q).await, Some(key("b")));
    assert_eq!(next_now(&q).await, None);
}

#[tokio::test]
async fn a_key_being_processed_is_not_handed_out_again_until_finished() {
    let q = Queue::new(no_jitter());
    q.add(key("a"), Cause::Outside);
    assert_eq!(next_now(&q).await, Some(key("a")));
    q.add(key("a"), Cause::Outside);
    assert_eq!(next_now(&q).await, None, "must not run concurrently");
    q.finish(&key("a"), Finish::Done);
    assert_eq!(
        next_now(&q).await,
        Some(key("a")),
        "the change seen meanwhile runs afterwards"
    );
}

#[tokio::test]
async fn retry_delays_double_from_the_base_and_reset_on_success() {
    let q = Queue::new(QueueConfig {
        base_delay: Duration::from_millis(5),
        ..no_jitter()
    });
    let k = key("a");
    let mut delays = Vec::new();
    for _ in 0..5 {
        q.add(k.clone(), Cause::Outside);
        let _ = q.next().await;
        delays.push(q.finish(&k, Finish::Retry).unwrap_or_default());
    }
    let ms: Vec<u128> = delays.iter().map(Duration::as_millis).collect();
    assert_eq!(ms, vec![5, 10, 20, 40, 80]);
    assert_eq!(q.failures(&k), 5);
    let _ = q.next().await;
    assert_eq!(q.finish(&k, Finish::Done), None);
    assert_eq!(q.failures(&k), 0);
}

#[tokio::test]
async fn retry_delay_is_capped_at_the_maximum() {
    let q = Queue::new(QueueConfig {
        max_delay: Duration::from_millis(30),
        ..no_jitter()
    });
    let k = key("a");
    let mut last = Duration::ZERO;
    for _ in 0..20 {
        q.add(k.clone(), Cause::Outside);
        let _ = q.next().await;
        last = q.finish(&k, Finish::Retry).unwrap_or_default();
    }
    assert_eq!(last, Duration::from_millis(30));
}

#[tokio::test]
async fn jitter_keeps_retry_delays_within_bounds_and_still_growing() {
    let q = Queue::new(QueueConfig {
        jitter: 0.1,
        ..QueueConfig::default()
    });
    let k = key("a");
    let mut prev = Duration::ZERO;
    for n in 0..10u32 {
        q.add(k.clone(), Cause::Outside);
        let _ = q.next().await;
        let d = q.finish(&k, Finish::Retry).unwrap_or_default();
        let nominal = Duration::from_millis(5) * 2u32.pow(n);
        assert!(
            d >= nominal.mul_f64(0.9) && d <= nominal.mul_f64(1.1),
            "{d:?} vs {nominal:?}"
        );
        assert!(d > prev);
        prev = d;
    }
}

#[tokio::test]
async fn a_delayed_key_falls_due_and_is_handed_out() {
    let q = Queue::new(no_jitter());
    q.add_after(key("a"), Duration::from_millis(200));
    assert_eq!(next_now(&q).await, None);
    let got = tokio::time::timeout(Duration::from_secs(2), q.next())
        .await
        .ok()
        .flatten();
    assert_eq!(got, Some(key("a")));
}

#[tokio::test]
async fn an_earlier_schedule_is_not_postponed_by_a_later_one() {
    let q = Queue::new(no_jitter());
    q.add_after(key("a"), Duration::from_millis(10));
    q.add_after(key("a"), Duration::from_secs(3600));
    let got = tokio::time::timeout(Duration::from_secs(2), q.next())
        .await
        .ok()
        .flatten();
    assert_eq!(got, Some(key("a")));
}

#[tokio::test]
async fn busy_reconciles_without_outside_change_are_flagged_as_a_hot_loop() {
    let q = Queue::new(QueueConfig {
        hot_loop_threshold: 3,
        ..no_jitter()
    });
    let k = key("a");
    let verdicts: Vec<bool> = (0..4).map(|_| q.guard(&k, true).flagged).collect();
    assert_eq!(verdicts, vec![false, false, true, true]);
    assert!(
        !q.guard(&k, false).flagged,
        "a quiet reconcile clears the streak"
    );
    assert_eq!(q.guard(&k, true).streak, 1);
}

#[tokio::test]
async fn an_outside_change_forgives_the_streak() {
    let q = Queue::new(QueueConfig {
        hot_loop_threshold: 2,
        ..no_jitter()
    });
    let k = key("a");
    q.guard(&k, true);
    q.guard(&k, true);
    q.add(k.clone(), Cause::Outside);
    assert_eq!(
        next_now(&q).await,
        Some(k.clone()),
        "an outside change runs at once"
    );
    assert_eq!(q.guard(&k, true).streak, 1);
}

#[tokio::test]
async fn a_flagged_key_is_throttled_on_echoes_and_immediate_requeues() {
    let q = Queue::new(QueueConfig {
        hot_loop_threshold: 2,
        hot_loop_delay: Duration::from_secs(60),
        ..no_jitter()
    });
    let k = key("a");
    q.add(k.clone(), Cause::Outside);
    let _ = q.next().await;
    q.guard(&k, true);
    assert_eq!(q.finish(&k, Finish::Now), Some(Duration::ZERO));
    let _ = next_now(&q).await;
    assert!(q.guard(&k, true).flagged);
    assert_eq!(q.finish(&k, Finish::Now), Some(Duration::from_secs(60)));
    q.add(k.clone(), Cause::Echo);
    assert_eq!(
        next_now(&q).await,
        None,
        "echo of our own write must not run at once"
    );
}

#[tokio::test]
async fn immediate_requeues_are_rate_limited_beyond_the_burst() {
    let q = Queue::new(QueueConfig {
        qps: 10.0,
        burst: 2,
        ..no_jitter()
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
    assert_eq!(delays[0], Duration::ZERO);
    assert_eq!(delays[1], Duration::ZERO);
    assert!(
        delays[2] >= Duration::from_millis(90),
        "third requeue waits for a token: {:?}",
        delays[2]
    );
}

#[tokio::test]
async fn shutdown_wakes_waiting_workers_with_none() {
    let q = std::sync::Arc::new(Queue::new(no_jitter()));
    let waiter = tokio::spawn({
        let q = q.clone();
        async move { q.next().await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    q.shutdown();
    let got = tokio::time::timeout(Duration::from_secs(2), waiter).await;
    assert!(matches!(got, Ok(Ok(None))));
}

#[tokio::test]
async fn the_echo_of_a_failed_reconciles_own_write_does_not_bring_the_retry_forward() {
    let q = Queue::new(QueueConfig {
        base_delay: Duration::from_secs(60),
        ..no_jitter()
    });
    let k = key("a");
    q.add(k.clone(), Cause::Outside);
    let _ = q.next().await;
    q.add(k.clone(), Cause::Echo);
    q.finish(&k, Finish::Retry);
    assert_eq!(
        next_now(&q).await,
        None,
        "echo during the failing reconcile is dropped"
    );
    q.add(k.clone(), Cause::Echo);
    q.add(k.clone(), Cause::Resync);
    assert_eq!(
        next_now(&q).await,
        None,
        "echo or resync while backing off waits for the retry"
    );
    q.add(k.clone(), Cause::Outside);
    assert_eq!(
        next_now(&q).await,
        Some(k),
        "an outside change retries at once"
    );
}
