//! `weir-bench soak`: the shipped `weir run` serving 1,000 Blogs through minutes of churn, kills,
//! plugin swaps and API faults, its memory sampled; does it leak, and does it still converge?
//!
//! First `--blogs` Blogs are created at once and the host converges them (the population). Then,
//! for `--minutes`, the churn ([`churn`]) keeps about that many live at `--rate` operations a
//! second, while the disruptions drawn from the same seed ([`plan`]) happen: `--kills` SIGKILLs of
//! the host, each followed by a start on the same plugins directory; `--swaps` replacements of the
//! Blog plugin file by another build (`--variant`, hot-loaded by the running host) and back; and
//! windows of one API fault kind at a time, injected by the emulator into the host's requests only
//! (their `User-Agent`, `weir/VERSION`). Every `--sample-secs` the running process's `VmRSS` is
//! printed ([`rss`]: per lifetime; the figure is the slope over the second half of the last one).
//! When the churn stops the faults are cleared, the original Blog is put back if a variant is
//! serving, and the convergence check of `weir_e2e::convergence` must pass: every Blog Ready as
//! its spec says, one child of each kind, none orphaned, duplicated, foreign-owned or still
//! labelled by the variant, and every deleted Blog gone.
//!
//! ```text
//! target/debug/weir-bench soak --minutes 10 --blogs 1000 --weir target/debug/weir --seed 1
//! ```

mod churn;
mod plan;
mod rss;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::time::{Instant, MissedTickBehavior};
use weir_e2e::convergence;
use weir_e2e::weir_run::WeirRun;
use weir_emulator::{Emulator, EmulatorConfig};

use self::churn::Churn;
use self::plan::{Draw, Event, ORIGINAL};
use self::rss::Sample;
use super::{Target, blog_kind, built, emulator_for, root, weir_binary};

/// Arguments of `weir-bench soak`.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// Minutes of churn (after the population has converged).
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Blogs created first and kept alive by the churn.
    #[arg(long, default_value_t = 1000)]
    blogs: usize,
    /// Churn operations per second.
    #[arg(long, default_value_t = 3.0)]
    rate: f64,
    /// SIGKILLs of the host during the churn.
    #[arg(long, default_value_t = 2)]
    kills: usize,
    /// Replacements of the Blog plugin file during the churn (a variant, then the original, ...).
    #[arg(long, default_value_t = 2)]
    swaps: usize,
    /// The builds swapped in (files of target/plugins; repeat or separate by commas).
    #[arg(long, value_delimiter = ',', default_value = "blog-v2.wasm")]
    variant: Vec<String>,
    /// No injected API faults.
    #[arg(long)]
    no_faults: bool,
    /// Seconds between two RSS samples.
    #[arg(long, default_value_t = 5)]
    sample_secs: u64,
    /// How long the population, and the namespace after the churn, may take to converge.
    #[arg(long, default_value_t = 900)]
    settle_secs: u64,
    /// Seed of the churn and the disruptions [default: random, printed].
    #[arg(long)]
    seed: Option<u64>,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
}

const NAMESPACE: &str = "soak";
/// The label `blog-v2.wasm` puts on every child: none may carry it once the original serves.
const VARIANT_LABEL: &str = "weir.dev/hot-swapped";
/// Between two looks of the convergence check (each lists every Blog and child).
const POLL: Duration = Duration::from_secs(2);

/// The host under test and its memory readings.
struct Host {
    run: WeirRun,
    samples: Vec<(Instant, f64, usize)>,
    pids: Vec<u32>,
}

impl Host {
    /// Reads the running process's `VmRSS` and prints it with `what`.
    fn sample(&mut self, since: Instant, what: &str) -> Result<()> {
        self.run.check_running()?;
        let mib = self.run.rss_mib().context("reading the host's VmRSS")?;
        let now = Instant::now();
        self.samples.push((now, mib, self.run.starts()));
        let t = now.duration_since(since).as_secs_f64();
        println!("{t:>8.1} {mib:>9.1} {:>5} {what}", self.run.starts());
        Ok(())
    }

    /// SIGKILL, then a start on the same plugins directory.
    fn kill(&mut self) -> Result<()> {
        // The process killed must be running: one that died by itself is a failure.
        self.run.check_running()?;
        self.run.restart()?;
        self.pids.extend(self.run.pid());
        Ok(())
    }
}

/// What the disruptions did.
#[derive(Default)]
struct Disrupted {
    kills: usize,
    swaps: BTreeMap<String, usize>,
    windows: BTreeMap<&'static str, usize>,
    serving: String,
    /// Whether the original Blog was put back after the churn.
    restored: bool,
}

impl Disrupted {
    /// Applies `event` to the host and the emulator.
    fn apply(&mut self, event: Event, host: &mut Host, emulator: &Emulator) -> Result<String> {
        Ok(match event {
            Event::Kill => {
                let old = host.run.pid().unwrap_or_default();
                host.kill()?;
                self.kills += 1;
                let new = host.run.pid().unwrap_or_default();
                format!("kill {}: pid {old} killed, pid {new} started", self.kills)
            }
            Event::Swap(build) => {
                weir_e2e::install(host.run.plugins(), &build, ORIGINAL)?;
                *self.swaps.entry(build.clone()).or_default() += 1;
                self.serving = build.clone();
                format!("swap: {ORIGINAL} replaced by {build}")
            }
            Event::FaultOn { name, rule } => {
                let p = rule.probability;
                emulator.faults().set(vec![rule]);
                if matches!(name, "cut watch" | "410") {
                    // Watches open for minutes: the rule meets the re-watches.
                    emulator.drop_watches();
                }
                *self.windows.entry(name).or_default() += 1;
                format!("faults on: {name} at {:.0}%", p * 100.0)
            }
            Event::FaultOff => {
                emulator.faults().clear();
                "faults off".to_owned()
            }
        })
    }
}

/// Polls the convergence check while sampling the host's memory.
async fn converge(
    churn: &Churn,
    client: &kube::Client,
    host: &mut Host,
    since: Instant,
    args: &SoakArgs,
    phase: &str,
) -> Result<(convergence::Converged, Duration)> {
    let started = Instant::now();
    let timeout = Duration::from_secs(args.settle_secs);
    let wait = convergence::wait_polling(client, NAMESPACE, &churn.expected, timeout, POLL);
    tokio::pin!(wait);
    let mut tick = tokio::time::interval(Duration::from_secs(args.sample_secs));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            converged = &mut wait => {
                host.run.check_running()?;
                return match converged {
                    Ok(c) => Ok((c, started.elapsed())),
                    Err(e) => {
                        println!("convergence ({phase}): FAILED: {e:#}");
                        println!("weir run's log ends:\n{}", host.run.log_tail(30));
                        anyhow::bail!("the host did not converge ({phase})");
                    }
                };
            }
            _ = tick.tick() => host.sample(since, phase)?,
        }
    }
}

/// Runs the soak and prints the samples, the disruptions, the slope and the convergence check.
pub async fn run(args: SoakArgs) -> Result<()> {
    let binary = weir_binary(args.weir.clone())?;
    for build in std::iter::once(ORIGINAL).chain(args.variant.iter().map(String::as_str)) {
        built(
            root().join("target/plugins").join(build),
            "run plugins/build.sh first",
        )?;
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let target = Target {
        kind: blog_kind(None),
        copy: None,
        namespace: NAMESPACE.into(),
    };
    let config = EmulatorConfig {
        watch_history: 200_000,
        ..EmulatorConfig::default()
    };
    let emulator = emulator_for(std::slice::from_ref(&target), config).await?;
    let client = emulator.client();
    let dir = tempfile::Builder::new().prefix("weir-soak-").tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let run = WeirRun::start(&binary, dir.path(), &kubeconfig, Some(NAMESPACE), 30)?;
    let mut host = Host {
        pids: run.pid().into_iter().collect(),
        run,
        samples: Vec::new(),
    };
    println!(
        "soak: {} for {} min, {} Blogs, {} ops/s, {} kills, {} swaps ({}), faults {}, seed {seed}",
        binary.display(),
        args.minutes,
        args.blogs,
        args.rate,
        args.kills,
        args.swaps,
        args.variant.join(", "),
        if args.no_faults { "off" } else { "on" },
    );
    println!("{:>8} {:>9} {:>5} what", "seconds", "RSS MiB", "life");

    // The population: created at once, converged before the clock starts.
    let t0 = Instant::now();
    let mut churn = Churn::new(client.clone(), NAMESPACE, seed);
    churn.populate(args.blogs).await?;
    let created = t0.elapsed();
    let (_, populated) = converge(&churn, &client, &mut host, t0, &args, "population").await?;
    println!(
        "population: {} Blogs created in {created:.1?}, converged {populated:.1?} later",
        args.blogs
    );

    // The churn and the disruptions.
    let length = Duration::from_secs_f64(args.minutes * 60.0);
    let mut plan = plan::draw(&Draw {
        seed,
        length,
        kills: args.kills,
        swaps: args.swaps,
        variants: &args.variant,
        faults_for: (!args.no_faults).then_some("weir/"),
    })
    .into_iter()
    .peekable();
    let mut disrupted = Disrupted {
        serving: ORIGINAL.to_owned(),
        ..Disrupted::default()
    };
    let started = Instant::now();
    let mut ops = tokio::time::interval(Duration::from_secs_f64(1.0 / args.rate));
    ops.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut tick = tokio::time::interval(Duration::from_secs(args.sample_secs));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let far = started + length + Duration::from_secs(3600);
    while started.elapsed() < length {
        let next = plan.peek().map_or(far, |(at, _)| started + *at);
        tokio::select! {
            _ = ops.tick() => churn.step(args.blogs).await?,
            _ = tick.tick() => {
                let what = format!("churn: {} Blogs, {} ops", churn.live(), churn.total());
                host.sample(started, &what)?;
                // The request log is the emulator's (this process's), not the host's: keep it small.
                emulator.clear_requests();
            }
            _ = tokio::time::sleep_until(next) => {
                if let Some((_, event)) = plan.next() {
                    let what = disrupted.apply(event, &mut host, &emulator)?;
                    println!("{:>8.1} {:>9} {:>5} {what}", started.elapsed().as_secs_f64(), "", "");
                }
            }
        }
    }
    let churned = started.elapsed();

    // The end: no faults, the original Blog, and the check.
    emulator.faults().clear();
    if disrupted.serving != ORIGINAL {
        weir_e2e::install(host.run.plugins(), ORIGINAL, ORIGINAL)?;
        *disrupted.swaps.entry(ORIGINAL.to_owned()).or_default() += 1;
        disrupted.restored = true;
    }
    let injected = emulator.faults().injected();
    churn.expected.stale_label = Some(VARIANT_LABEL.to_owned());
    let converged = converge(
        &churn,
        &client,
        &mut host,
        started,
        &args,
        "after the churn",
    )
    .await;
    host.sample(started, "converged")?;

    summary(
        &args,
        &churn,
        &disrupted,
        &host,
        &injected,
        started..started + churned,
    );
    let (c, settled) = converged?;
    println!(
        "convergence: ok {settled:.1?} after the churn: {} Blogs Ready, {} children, none orphaned, \
         duplicated, foreign-owned or labelled {VARIANT_LABEL}; {} deleted Blogs gone",
        c.blogs,
        c.children,
        churn.expected.deleted.len()
    );
    Ok(())
}

/// Prints what the churn (over `churned`) and the disruptions did, and the memory per lifetime.
fn summary(
    args: &SoakArgs,
    churn: &Churn,
    disrupted: &Disrupted,
    host: &Host,
    injected: &BTreeMap<&'static str, u64>,
    churned: std::ops::Range<Instant>,
) {
    let (started, end) = (churned.start, churned.end);
    let ops: Vec<String> = churn
        .counts()
        .map(|(op, n)| format!("{n} {}", op.name()))
        .collect();
    println!("churn over {:.1?}: {}", end - started, ops.join(", "));
    let pids: Vec<String> = host.pids.iter().map(u32::to_string).collect();
    println!(
        "kills: {} of {} (pids {})",
        disrupted.kills,
        args.kills,
        pids.join(" -> ")
    );
    let swaps: Vec<String> = disrupted
        .swaps
        .iter()
        .map(|(b, n)| format!("{b} x{n}"))
        .collect();
    println!(
        "plugin swaps: {} ({}){}",
        disrupted.swaps.values().sum::<usize>(),
        swaps.join(", "),
        if disrupted.restored {
            "; the last one after the churn, restoring the original"
        } else {
            ""
        }
    );
    let windows: Vec<String> = disrupted
        .windows
        .iter()
        .map(|(k, n)| format!("{k} x{n}"))
        .collect();
    let faults: Vec<String> = injected.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!(
        "fault windows: {} ({}); faults injected into the host's requests: {} ({})",
        disrupted.windows.values().sum::<usize>(),
        windows.join(", "),
        injected.values().sum::<u64>(),
        faults.join(", ")
    );
    let samples: Vec<Sample> = host
        .samples
        .iter()
        .filter(|(at, _, _)| *at <= end)
        .map(|&(at, mib, life)| Sample {
            t: if at >= started {
                at.duration_since(started).as_secs_f64()
            } else {
                -started.duration_since(at).as_secs_f64()
            },
            mib,
            life,
        })
        .collect();
    let lives = rss::lifetimes(&samples);
    for l in &lives {
        println!(
            "RSS life {} ({:.0} s to {:.0} s of the churn): first {:.1} MiB, last {:.1} MiB, peak {:.1} MiB; \
             slope over the second half of its churn ({} samples): {:+.3} MiB/min",
            l.life, l.from, l.to, l.first, l.last, l.peak, l.slope_samples, l.slope
        );
    }
    if let Some(l) = lives.last() {
        println!(
            "RSS slope (last lifetime, second half of its churn, {} samples): {:+.3} MiB/min",
            l.slope_samples, l.slope
        );
    }
    if let Some(&(_, mib, _)) = host.samples.last() {
        println!("RSS once converged: {mib:.1} MiB");
    }
}
