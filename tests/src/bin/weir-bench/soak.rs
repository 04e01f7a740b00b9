//! `weir-bench soak`: the shipped `weir run` serving the Blog for minutes of churn, its memory
//! sampled; does it leak, and does it still converge?
//!
//! The churn keeps about `--blogs` Blogs alive: Blogs created, edited (title, replicas) and
//! deleted, children edited (a Deployment scaled by hand) and deleted (a page ConfigMap), at
//! `--rate` operations a second from a seeded generator. Every `--sample-secs` the host's
//! `VmRSS` is read from `/proc/PID/status` and printed. At the end: the RSS slope (least squares
//! over the second half of the samples, after start-up and warm caches) and the convergence
//! check of `weir_e2e::convergence` (every Blog Ready, one child of each kind, no orphan).
//!
//! ```text
//! target/debug/weir-bench soak --minutes 3 --weir target/debug/weir
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use rand::{Rng, SeedableRng};
use serde_json::json;
use weir_e2e::convergence::{self, Expected};
use weir_e2e::kinds;
use weir_e2e::weir_run::WeirRun;
use weir_emulator::EmulatorConfig;

use super::{Target, blog_kind, built, emulator_for, root};

/// Arguments of `weir-bench soak`.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// Minutes of churn.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Blogs the churn keeps alive.
    #[arg(long, default_value_t = 100)]
    blogs: usize,
    /// Churn operations per second.
    #[arg(long, default_value_t = 5.0)]
    rate: f64,
    /// Seconds between two RSS samples.
    #[arg(long, default_value_t = 5)]
    sample_secs: u64,
    /// Seed of the churn [default: random, printed].
    #[arg(long)]
    seed: Option<u64>,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
}

const NAMESPACE: &str = "soak";
/// How long the host may take to converge once the churn stops.
const SETTLE: Duration = Duration::from_secs(180);

/// The churn's state: which Blogs live, which were deleted, what was done.
struct Churn {
    rng: rand::rngs::StdRng,
    expected: Expected,
    live: Vec<String>,
    next: usize,
    ops: [usize; 5],
}

const OPS: [&str; 5] = ["create", "edit", "delete", "child edit", "child delete"];

impl Churn {
    /// One operation: creations until `target` Blogs live, then a random mix.
    async fn step(&mut self, client: &kube::Client, target: usize) -> Result<()> {
        let api = |kind: &weir::plugin::ResourceKind| -> Api<DynamicObject> {
            Api::namespaced_with(client.clone(), NAMESPACE, &kind.api_resource())
        };
        let roll: f64 = self.rng.random();
        let op = if self.live.len() < target / 2 || self.live.is_empty() {
            0
        } else if self.live.len() < target {
            // Growing: mostly creations.
            if roll < 0.6 { 0 } else { 1 }
        } else {
            // Creations and deletions equally likely; over `target` + 10% a creation becomes a
            // deletion, so the population stays near `target`.
            match roll {
                r if r < 0.2 && self.live.len() <= target + target / 10 => 0,
                r if r < 0.2 => 2,
                r if r < 0.6 => 1,
                r if r < 0.8 => 2,
                r if r < 0.9 => 3,
                _ => 4,
            }
        };
        let pick = self.rng.random_range(0..self.live.len().max(1));
        match op {
            0 => {
                let name = format!("s{}", self.next);
                self.next += 1;
                let blog: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "weir.dev/v1alpha1",
                    "kind": "Blog",
                    "metadata": {"name": name, "namespace": NAMESPACE},
                    "spec": {"title": format!("{name} v0"), "replicas": 1},
                }))?;
                api(&kinds::blog())
                    .create(&PostParams::default(), &blog)
                    .await
                    .with_context(|| format!("creating {name}"))?;
                self.expected.live.insert(name.clone());
                self.live.push(name);
            }
            1 => {
                let name = &self.live[pick];
                let v: u32 = self.rng.random_range(1..1000);
                let replicas: u32 = self.rng.random_range(1..=3);
                let patch =
                    json!({"spec": {"title": format!("{name} v{v}"), "replicas": replicas}});
                api(&kinds::blog())
                    .patch(name, &user(), &Patch::Merge(patch))
                    .await
                    .with_context(|| format!("editing {name}"))?;
            }
            2 => {
                let name = self.live.swap_remove(pick);
                api(&kinds::blog())
                    .delete(&name, &DeleteParams::default())
                    .await
                    .with_context(|| format!("deleting {name}"))?;
                self.expected.live.remove(&name);
                self.expected.deleted.insert(name);
            }
            3 => {
                // The child may not exist yet (a Blog just created): nothing to edit then.
                let patch = json!({"spec": {"replicas": 5}});
                let _ = api(&kinds::deployment())
                    .patch(&self.live[pick], &user(), &Patch::Merge(patch))
                    .await;
            }
            _ => {
                let page = format!("{}-page", self.live[pick]);
                let _ = api(&kinds::config_map())
                    .delete(&page, &DeleteParams::default())
                    .await;
            }
        }
        self.ops[op] += 1;
        Ok(())
    }
}

/// A person's field manager.
fn user() -> PatchParams {
    PatchParams {
        field_manager: Some("soak-user".into()),
        ..PatchParams::default()
    }
}

/// The least-squares slope of `samples` (seconds, MiB), in MiB per minute.
fn slope_per_minute(samples: &[(f64, f64)]) -> f64 {
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

/// Runs the soak and prints the samples, the slope and the convergence check.
pub async fn run(args: SoakArgs) -> Result<()> {
    let binary = built(
        args.weir
            .clone()
            .unwrap_or_else(|| root().join("target/release/weir")),
        "build it with `cargo build --release -p weir --bin weir`",
    )?;
    let seed = args.seed.unwrap_or_else(rand::random);
    let target = Target {
        kind: blog_kind(None),
        copy: None,
        namespace: NAMESPACE.into(),
    };
    let emulator = emulator_for(std::slice::from_ref(&target), EmulatorConfig::default()).await?;
    let client = emulator.client();
    let dir = tempfile::Builder::new().prefix("weir-soak-").tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let mut host = WeirRun::start(&binary, dir.path(), &kubeconfig, Some(NAMESPACE), 30)?;
    println!(
        "soak: {} for {} min, ~{} Blogs, {} ops/s, seed {seed}",
        binary.display(),
        args.minutes,
        args.blogs,
        args.rate
    );

    let mut churn = Churn {
        rng: rand::rngs::StdRng::seed_from_u64(seed),
        expected: Expected::default(),
        live: Vec::new(),
        next: 0,
        ops: [0; 5],
    };
    let length = Duration::from_secs_f64(args.minutes * 60.0);
    let started = Instant::now();
    let mut ops = tokio::time::interval(Duration::from_secs_f64(1.0 / args.rate));
    let mut samples_tick = tokio::time::interval(Duration::from_secs(args.sample_secs));
    let mut samples: Vec<(f64, f64)> = Vec::new();
    println!(
        "{:>8} {:>9} {:>6} {:>7}",
        "seconds", "RSS MiB", "Blogs", "ops"
    );
    while started.elapsed() < length {
        tokio::select! {
            _ = ops.tick() => churn.step(&client, args.blogs).await?,
            _ = samples_tick.tick() => {
                host.check_running()?;
                let t = started.elapsed().as_secs_f64();
                let rss = host.rss_mib().context("reading the host's VmRSS")?;
                samples.push((t, rss));
                println!(
                    "{t:>8.1} {rss:>9.1} {:>6} {:>7}",
                    churn.live.len(),
                    churn.ops.iter().sum::<usize>()
                );
                // The request log is the emulator's (this process's), not the host's: keep it small.
                emulator.clear_requests();
            }
        }
    }
    let half = length.as_secs_f64() / 2.0;
    let second_half: Vec<(f64, f64)> = samples.iter().copied().filter(|s| s.0 >= half).collect();
    let slope = slope_per_minute(&second_half);
    let ops: Vec<String> = OPS
        .iter()
        .zip(churn.ops)
        .map(|(name, n)| format!("{n} {name}"))
        .collect();
    println!("churn: {}", ops.join(", "));
    let (first, peak) = (
        samples.first().map_or(0.0, |s| s.1),
        samples.iter().map(|s| s.1).fold(0.0, f64::max),
    );
    println!(
        "RSS: first {first:.1} MiB, last {:.1} MiB, peak {peak:.1} MiB; slope over the second half ({} samples): {slope:+.3} MiB/min",
        samples.last().map_or(0.0, |s| s.1),
        second_half.len()
    );
    let settle = Instant::now();
    let converged = convergence::wait(&client, NAMESPACE, &churn.expected, SETTLE).await;
    host.check_running()?;
    match converged {
        Ok(c) => println!(
            "convergence: ok in {:?}: {} Blogs Ready, {} children, none orphaned or duplicated, {} deleted Blogs gone",
            settle.elapsed(),
            c.blogs,
            c.children,
            churn.expected.deleted.len()
        ),
        Err(e) => {
            println!("convergence: FAILED: {e:#}");
            println!("weir run's log ends:\n{}", host.log_tail(30));
            anyhow::bail!("the host did not converge after the soak");
        }
    }
    Ok(())
}
