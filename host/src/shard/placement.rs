//! The one placement loop of both modes: a pass every period, and one at the moment a member's
//! Lease runs out unless renewed.
//!
//! What a pass does is the mode's ([`Placer`]): by labels, the leader's coordinator labels the
//! parents ([`super::coordinator`]); server-side, each replica moves its own served ranges
//! ([`super::share`]). When the loop runs is the manager's: the coordinator only while this
//! replica leads, a replica's own share from its start to its stop.

use std::future::Future;
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use super::members;

/// One mode's pass over the members and the parents.
pub trait Placer: Send {
    /// Places what the members ask for now; returns when the first member's Lease runs out
    /// unless renewed (`None`: no member's does, or the pass failed and the period decides).
    fn pass(&mut self) -> impl Future<Output = Option<SystemTime>> + Send;

    /// The loop stopped (leadership shut, or the host stops): what it showed is no longer so.
    fn stopped(&mut self) {}
}

/// Runs `placer`'s passes every `every`, and when the first member's Lease a pass saw runs out,
/// until `stop`.
pub async fn run(mut placer: impl Placer, every: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut expiry: Option<SystemTime> = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {}
            // A member that stops renewing is gone at this moment: place its parents then.
            () = tokio::time::sleep(expiry.map_or(Duration::ZERO, members::until_past)),
                if expiry.is_some() => {}
        }
        expiry = tokio::select! {
            () = stop.cancelled() => break,
            expiry = placer.pass() => expiry,
        };
    }
    placer.stopped();
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts its passes; its first pass sees a member's Lease run out `expires_in` from then.
    struct Counting {
        passes: Arc<AtomicUsize>,
        expires_in: Option<Duration>,
        stopped: Arc<AtomicUsize>,
    }

    impl Placer for Counting {
        async fn pass(&mut self) -> Option<SystemTime> {
            self.passes.fetch_add(1, Ordering::SeqCst);
            self.expires_in.take().map(|d| SystemTime::now() + d)
        }

        fn stopped(&mut self) {
            self.stopped.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting(expires_in: Option<Duration>) -> (Counting, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let passes = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicUsize::new(0));
        let placer = Counting {
            passes: passes.clone(),
            expires_in,
            stopped: stopped.clone(),
        };
        (placer, passes, stopped)
    }

    #[tokio::test]
    async fn the_first_pass_is_at_once_and_the_next_waits_for_the_period() {
        let (placer, passes, stopped) = counting(None);
        let stop = CancellationToken::new();
        let task = tokio::spawn(run(placer, Duration::from_secs(3600), stop.clone()));
        tokio::time::timeout(Duration::from_secs(5), async {
            while passes.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no first pass"));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(passes.load(Ordering::SeqCst), 1, "the period is an hour");
        stop.cancel();
        task.await.unwrap_or_else(|e| panic!("the loop: {e}"));
        assert_eq!(stopped.load(Ordering::SeqCst), 1, "told it stopped");
    }

    #[tokio::test]
    async fn a_lease_running_out_brings_the_next_pass_forward() {
        let (placer, passes, _) = counting(Some(Duration::from_millis(50)));
        let stop = CancellationToken::new();
        let task = tokio::spawn(run(placer, Duration::from_secs(3600), stop.clone()));
        tokio::time::timeout(Duration::from_secs(5), async {
            while passes.load(Ordering::SeqCst) < 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no pass when the Lease ran out, only the hourly one"));
        stop.cancel();
        task.await.unwrap_or_else(|e| panic!("the loop: {e}"));
    }
}
