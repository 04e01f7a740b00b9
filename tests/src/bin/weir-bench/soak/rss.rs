//! The host's resident memory over the soak, per process lifetime, and its slope.
//!
//! A kill ends a lifetime: the new process starts from nothing, re-lists and fills its caches
//! again, so a slope across a kill measures the restart, not a leak, and the first half of any
//! lifetime holds its start-up growth. The figure is therefore the least-squares slope over the
//! second half of the last lifetime's churn (the longest: kills fall in the first 60%).

/// One reading of `VmRSS`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sample {
    /// Seconds since the churn started (negative while the population is created).
    pub(super) t: f64,
    pub(super) mib: f64,
    /// Which process (1 for the first start).
    pub(super) life: usize,
}

/// One lifetime's samples summed up.
pub(super) struct Lifetime {
    pub(super) life: usize,
    pub(super) from: f64,
    pub(super) to: f64,
    pub(super) first: f64,
    pub(super) last: f64,
    pub(super) peak: f64,
    /// Slope over the second half of its churn, MiB/min, with the samples it used.
    pub(super) slope: f64,
    pub(super) slope_samples: usize,
}

/// Every lifetime of `samples`, in order.
pub(super) fn lifetimes(samples: &[Sample]) -> Vec<Lifetime> {
    let mut lives: Vec<usize> = samples.iter().map(|s| s.life).collect();
    lives.dedup();
    lives
        .into_iter()
        .map(|life| {
            let own: Vec<Sample> = samples.iter().copied().filter(|s| s.life == life).collect();
            let from = own.first().map_or(0.0, |s| s.t);
            let to = own.last().map_or(0.0, |s| s.t);
            let half = from.max(0.0) + (to - from.max(0.0)) / 2.0;
            let second: Vec<(f64, f64)> = own
                .iter()
                .filter(|s| s.t >= half)
                .map(|s| (s.t, s.mib))
                .collect();
            Lifetime {
                life,
                from,
                to,
                first: own.first().map_or(0.0, |s| s.mib),
                last: own.last().map_or(0.0, |s| s.mib),
                peak: own.iter().map(|s| s.mib).fold(0.0, f64::max),
                slope: slope_per_minute(&second),
                slope_samples: second.len(),
            }
        })
        .collect()
}

/// The least-squares slope of `samples` (seconds, MiB), in MiB per minute.
pub(super) fn slope_per_minute(samples: &[(f64, f64)]) -> f64 {
    let n = samples.len() as f64;
    if samples.len() < 2 {
        return 0.0;
    }
    let mean_t = samples.iter().map(|s| s.0).sum::<f64>() / n;
    let mean_m = samples.iter().map(|s| s.1).sum::<f64>() / n;
    let cov: f64 = samples
        .iter()
        .map(|(t, m)| (t - mean_t) * (m - mean_m))
        .sum();
    let var: f64 = samples.iter().map(|(t, _)| (t - mean_t).powi(2)).sum();
    if var == 0.0 { 0.0 } else { cov / var * 60.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_climb_of_one_mib_a_minute_has_slope_one() {
        let samples: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64 * 6.0, 40.0 + i as f64 * 0.1))
            .collect();
        assert!((slope_per_minute(&samples) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_restart_splits_the_samples_and_each_slope_is_its_own_second_half() {
        // Life 1 climbs 2 MiB/min; after the kill, life 2 warms up fast, then stays flat.
        let mut samples: Vec<Sample> = (0..10)
            .map(|i| Sample {
                t: i as f64 * 6.0,
                mib: 40.0 + i as f64 * 0.2,
                life: 1,
            })
            .collect();
        for i in 0..20 {
            let mib = if i < 5 { 20.0 + i as f64 * 4.0 } else { 40.0 };
            samples.push(Sample {
                t: 60.0 + i as f64 * 6.0,
                mib,
                life: 2,
            });
        }
        let lives = lifetimes(&samples);
        assert_eq!(lives.len(), 2);
        assert!((lives[0].slope - 2.0).abs() < 1e-9, "{}", lives[0].slope);
        assert_eq!(lives[1].slope, 0.0);
        assert_eq!(lives[1].slope_samples, 10);
        assert_eq!((lives[1].first, lives[1].peak), (20.0, 40.0));
    }

    #[test]
    fn the_population_phase_is_left_out_of_the_first_lifetimes_slope() {
        // Growing while the Blogs are created (t < 0), flat during the churn.
        let samples: Vec<Sample> = (-10..10)
            .map(|i| Sample {
                t: i as f64 * 6.0,
                mib: if i < 0 { 50.0 + i as f64 } else { 50.0 },
                life: 1,
            })
            .collect();
        let lives = lifetimes(&samples);
        assert_eq!(lives[0].slope, 0.0);
        assert_eq!(lives[0].slope_samples, 5);
    }
}
