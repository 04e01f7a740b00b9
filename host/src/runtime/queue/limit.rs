//! Rate limits: per-key exponential backoff after failures, and one token bucket over all retries and requeues.
//!
//! client-go's `ItemExponentialFailureRateLimiter` and `BucketRateLimiter`, which
//! controller-runtime combines by taking the longer of the two delays (so does the facade).

use std::collections::HashMap;
use std::time::Duration;

use rand::RngExt;
use tokio::time::Instant;

use crate::runtime::ObjectKey;

/// `d` scaled by a random factor in `[1 - jitter, 1 + jitter]` (jitter clamped to 0.5).
pub fn jittered(d: Duration, jitter: f64) -> Duration {
    let j = jitter.clamp(0.0, 0.5);
    if j == 0.0 {
        return d;
    }
    d.mul_f64(rand::rng().random_range(1.0 - j..=1.0 + j))
}

/// `base · 2^steps`, capped at `max` (no jitter).
pub fn doubled(base: Duration, steps: u32, max: Duration) -> Duration {
    base.saturating_mul(2u32.saturating_pow(steps.min(40)))
        .min(max)
}

/// Failures in a row per key and the retry delay they earn.
pub struct Backoff {
    base: Duration,
    max: Duration,
    jitter: f64,
    failures: HashMap<ObjectKey, u32>,
}

impl Backoff {
    /// Delays start at `base`, double per failure up to `max`, each with ±`jitter`.
    pub fn new(base: Duration, max: Duration, jitter: f64) -> Self {
        Self {
            base,
            max,
            jitter,
            failures: HashMap::new(),
        }
    }

    /// Counts one more failure of `key` and returns its retry delay: `base · 2^(n-1)`, capped, jittered.
    pub fn failed(&mut self, key: &ObjectKey) -> Duration {
        let n = self.failures.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        jittered(doubled(self.base, *n - 1, self.max), self.jitter)
    }

    /// Forgets `key`'s failures (after a success or a permanent failure).
    pub fn forget(&mut self, key: &ObjectKey) {
        self.failures.remove(key);
    }

    /// Failures in a row of `key`.
    pub fn failures(&self, key: &ObjectKey) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }
}

/// A token bucket: `burst` tokens, refilled at `qps` per second; a caller without a token
/// waits until one would be free.
pub struct TokenBucket {
    qps: f64,
    burst: u32,
    tokens: f64,
    refilled: Option<Instant>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            tokens: f64::from(burst),
            refilled: None,
        }
    }

    /// Takes a token at `now`; returns how long the caller must wait for it (zero if one was free).
    /// Tokens go negative, so callers beyond the burst queue up one `1/qps` apart.
    pub fn take(&mut self, now: Instant) -> Duration {
        self.refill(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 || self.qps <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }

    /// Takes a token at `now` if one is free; otherwise takes nothing and says how long until
    /// one is. A bucket with no rate (`qps` ≤ 0) never runs out.
    pub fn try_take(&mut self, now: Instant) -> Result<(), Duration> {
        if self.qps <= 0.0 {
            return Ok(());
        }
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.qps))
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = self
            .refilled
            .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64());
        self.refilled = Some(now);
        self.tokens = (self.tokens + elapsed * self.qps).min(f64::from(self.burst));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn retry_delays_double_from_the_base_and_reset_when_forgotten() {
        let mut b = Backoff::new(5 * MS, Duration::from_secs(1000), 0.0);
        let k = key("a");
        let ms: Vec<u128> = (0..5).map(|_| b.failed(&k).as_millis()).collect();
        assert_eq!(ms, vec![5, 10, 20, 40, 80]);
        assert_eq!(b.failures(&k), 5);
        assert_eq!(b.failures(&key("b")), 0, "per key");
        b.forget(&k);
        assert_eq!(b.failures(&k), 0);
        assert_eq!(b.failed(&k), 5 * MS, "starts again from the base");
    }

    #[test]
    fn retry_delay_is_capped_at_the_maximum() {
        let mut b = Backoff::new(5 * MS, 30 * MS, 0.0);
        let last = (0..100).map(|_| b.failed(&key("a"))).last();
        assert_eq!(last, Some(30 * MS));
    }

    #[test]
    fn jitter_keeps_retry_delays_within_bounds_and_still_growing() {
        let mut b = Backoff::new(5 * MS, Duration::from_secs(1000), 0.1);
        let mut prev = Duration::ZERO;
        for n in 0..10u32 {
            let d = b.failed(&key("a"));
            let nominal = 5 * MS * 2u32.pow(n);
            assert!(
                d >= nominal.mul_f64(0.9) && d <= nominal.mul_f64(1.1),
                "{d:?} vs {nominal:?}"
            );
            assert!(d > prev);
            prev = d;
        }
    }

    #[test]
    fn callers_beyond_the_burst_wait_one_interval_apart() {
        let mut bucket = TokenBucket::new(10.0, 2);
        let now = Instant::now();
        let waits: Vec<u128> = (0..4).map(|_| bucket.take(now).as_millis()).collect();
        assert_eq!(waits, vec![0, 0, 100, 200]);
    }

    #[test]
    fn the_bucket_refills_at_qps_up_to_the_burst() {
        let mut bucket = TokenBucket::new(10.0, 2);
        let now = Instant::now();
        bucket.take(now);
        bucket.take(now);
        assert_eq!(bucket.take(now + 100 * MS), Duration::ZERO, "one refilled");
        let later = now + Duration::from_secs(3600);
        let waits: Vec<Duration> = (0..3).map(|_| bucket.take(later)).collect();
        assert_eq!(waits[..2], [Duration::ZERO; 2], "refilled to the burst");
        assert!(waits[2] > Duration::ZERO, "but not beyond it");
    }
}
