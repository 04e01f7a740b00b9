//! The soak's disruptions, drawn up front from its seed: host kills, plugin swaps and windows
//! of injected API faults, each at a moment of the churn.
//!
//! Kills fall in the first 60% of the churn (after its first 10%), so the last process lifetime
//! covers at least the last 40%: the memory slope is read over its second half. Swaps are evenly
//! spaced and alternate a variant build with the original Blog. Fault windows of 10–30 s, one
//! fault kind each at 10–30% of the host's matching requests, are separated by 15–45 s without
//! faults and all end before the churn does.

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use weir_e2e::api_faults;
use weir_emulator::Rule;

/// The Blog build the host serves at the start and must serve at the end.
pub(super) const ORIGINAL: &str = "blog.wasm";

/// One disruption.
#[derive(Clone, Debug)]
pub(super) enum Event {
    /// SIGKILL of `weir run`, then a start on the same plugins directory.
    Kill,
    /// The Blog plugin file replaced by this build (a file of `target/plugins`).
    Swap(String),
    /// From now on the host's requests meet this fault (named as in [`api_faults::every_kind`]).
    FaultOn {
        /// The fault kind's name.
        name: &'static str,
        /// Its rule, scoped and at its probability.
        rule: Rule,
    },
    /// No fault from now on.
    FaultOff,
}

/// What to draw.
pub(super) struct Draw<'a> {
    pub(super) seed: u64,
    pub(super) length: Duration,
    pub(super) kills: usize,
    pub(super) swaps: usize,
    /// Builds swapped in turn with the original (`blog-v2.wasm`, ...).
    pub(super) variants: &'a [String],
    /// Inject faults into requests whose `User-Agent` contains this; `None`: no faults.
    pub(super) faults_for: Option<&'a str>,
}

/// The disruptions of one soak, in time order.
pub(super) fn draw(d: &Draw<'_>) -> Vec<(Duration, Event)> {
    // A stream of its own, so the churn's draws do not move the disruptions.
    let mut rng = rand::rngs::StdRng::seed_from_u64(d.seed ^ 0x5eed_d15c);
    let secs = d.length.as_secs_f64();
    let mut events = Vec::new();
    for _ in 0..d.kills {
        let at = rng.random_range(0.1..0.6) * secs;
        events.push((Duration::from_secs_f64(at), Event::Kill));
    }
    for k in 0..d.swaps {
        let at = secs * (k + 1) as f64 / (d.swaps + 1) as f64;
        let build = match (k % 2, d.variants.is_empty()) {
            (0, false) => d.variants[(k / 2) % d.variants.len()].clone(),
            _ => ORIGINAL.to_owned(),
        };
        events.push((Duration::from_secs_f64(at), Event::Swap(build)));
    }
    if let Some(agent) = d.faults_for {
        let kinds = api_faults::every_kind();
        let mut t = rng.random_range(10.0..30.0);
        loop {
            let end = t + rng.random_range(10.0..=30.0);
            if end > secs - 5.0 {
                break;
            }
            let (name, rule) = kinds[rng.random_range(0..kinds.len())].clone();
            let rule = rule.probability(rng.random_range(0.1..=0.3)).client(agent);
            events.push((Duration::from_secs_f64(t), Event::FaultOn { name, rule }));
            events.push((Duration::from_secs_f64(end), Event::FaultOff));
            t = end + rng.random_range(15.0..=45.0);
        }
    }
    events.sort_by_key(|(at, _)| *at);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(seed: u64) -> Vec<(Duration, Event)> {
        draw(&Draw {
            seed,
            length: Duration::from_secs(600),
            kills: 2,
            swaps: 4,
            variants: &["blog-v2.wasm".to_owned()],
            faults_for: Some("weir/"),
        })
    }

    #[test]
    fn kills_fall_in_the_first_sixty_percent_so_the_last_lifetime_is_long() {
        for seed in 0..50 {
            let kills: Vec<Duration> = plan(seed)
                .into_iter()
                .filter_map(|(at, e)| matches!(e, Event::Kill).then_some(at))
                .collect();
            assert_eq!(kills.len(), 2);
            assert!(
                kills.iter().all(|at| (60..360).contains(&at.as_secs())),
                "{kills:?}"
            );
        }
    }

    #[test]
    fn swaps_alternate_a_variant_with_the_original_and_end_on_the_original() {
        let swaps: Vec<String> = plan(1)
            .into_iter()
            .filter_map(|(_, e)| match e {
                Event::Swap(b) => Some(b),
                _ => None,
            })
            .collect();
        assert_eq!(
            swaps,
            ["blog-v2.wasm", "blog.wasm", "blog-v2.wasm", "blog.wasm"]
        );
    }

    #[test]
    fn every_fault_window_closes_before_the_churn_ends_and_is_scoped_to_the_host() {
        let events = plan(7);
        let mut open = false;
        for (at, e) in &events {
            match e {
                Event::FaultOn { rule, .. } => {
                    assert!(!open, "windows overlap at {at:?}");
                    assert_eq!(rule.client.as_deref(), Some("weir/"));
                    assert!((0.1..=0.3).contains(&rule.probability));
                    open = true;
                }
                Event::FaultOff => open = false,
                _ => {}
            }
        }
        assert!(!open);
        let windows = events
            .iter()
            .filter(|(_, e)| matches!(e, Event::FaultOn { .. }))
            .count();
        assert!(windows >= 8, "{windows} windows in 10 minutes");
    }
}
