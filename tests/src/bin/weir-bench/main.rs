//! The host benchmark: the shipped `weir run` binary against the native twin, each a child
//! process of this one, on N Blogs created at once on the emulator; prints a table.
//!
//! ```text
//! cargo build --release -p weir -p weir-e2e --bin weir --bin weir-bench --bin weir-twin
//! plugins/build.sh ten      # the Blog plugin, and the ten Blog kinds of the ten-plugin row
//! target/release/weir-bench --blogs 1000 --blogs 10000 --ten 100
//! plugins/build.sh fifty && target/release/weir-bench --only weir --blogs 1000 --fifty 20
//! target/release/weir-bench swap --blogs 100   # a hot swap's latency (see `swap`)
//! target/release/weir-bench hostile   # the Blog beside the hostile plugin (see `hostile`)
//! target/release/weir-bench soak --minutes 10   # churn, kills, swaps, faults; RSS slope, convergence (`soak`)
//! target/release/weir-bench failover   # one of three sharded replicas killed, five times (`failover`)
//! target/release/weir-bench rate   # p99 from an edit to its child, one and three replicas (`rate`)
//! target/release/weir-bench edits   # requests and writes per parent edit at 50 a second (`edits`)
//! target/release/weir-bench members --clusters 100   # memory per engaged member cluster, a rotation (`members`)
//! target/release/weir-bench tenants   # a tenant's p99 edit latency, quiet and beside another's flood (`tenants`)
//! ```
//!
//! The emulator runs in this process; its request log counts the children's requests (this
//! process's own creates and its watch of the Blogs, sent as `User-Agent: weir-bench`, are left
//! out). Each child's peak RSS is its own `VmHWM`.
//! The twin runs as its own process, the `weir-twin` binary beside this one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use kube::api::{Api, DynamicObject};
use weir::client::ClientLimits;
use weir_emulator::EmulatorConfig;

mod cluster;
mod controllers;
mod delivery;
mod edits;
mod failover;
mod fleet;
mod hostile;
mod members;
mod memory;
mod rate;
mod related;
mod request_mix;
mod soak;
mod stored_writes;
mod swap;
mod table;
mod tenants;

use self::cluster::{
    BENCH_AGENT, Readiness, Target, bench_client, blog_kind, create_blogs, emulator_for, is_ready,
};
use self::controllers::{Children, Setup, start};
use self::table::{Row, print, print_ratios, print_writes, push};

/// The emulator this process hosts runs on mimalloc; the controllers it is measured under do
/// not: `weir run` is the shipped binary (the system's allocator) and the twin is its own
/// binary, `weir-twin`, for that reason. With glibc's allocator here the emulator spent more
/// CPU than `weir run` at 10,000 Blogs, a third of it in malloc and free, so the emulator, not
/// the controllers, decided the time (tests/BENCHMARKS.md, "The emulator's allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RESYNC_SECS: u64 = 3;
const WORKERS: usize = 8;

/// Weir (the `weir run` binary) against the native kube-runtime twin, on the embedded emulator.
#[derive(Debug, Parser)]
#[command(name = "weir-bench", args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    /// Blogs of one row (repeat, or separate by commas: `--blogs 1000,10000`).
    #[arg(long, value_delimiter = ',', default_value = "1000")]
    blogs: Vec<usize>,
    /// Also the ten-plugin row: ten distinct Blog components (`plugins/build.sh ten`) in one
    /// `weir run`, against ten twin processes, with this many Blogs each (default 100).
    #[arg(long, num_args = 0..=1, default_missing_value = "100", value_name = "BLOGS_EACH")]
    ten: Option<usize>,
    /// Only the ten-plugin row (no `--blogs` rows).
    #[arg(long, requires = "ten")]
    ten_only: bool,
    /// Also the fifty-plugin row: fifty distinct Blog components (`plugins/build.sh fifty`) with
    /// this many Blogs each (default 20); with a one-plugin row of as many Blogs, the host's RSS
    /// per additional plugin is printed.
    #[arg(long, num_args = 0..=1, default_missing_value = "20", value_name = "BLOGS_EACH")]
    fifty: Option<usize>,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
    /// `weir run --kube-api-qps` of the Blog and many-plugin rows (0 lifts its client-side limit;
    /// the twin has none) [default: `weir run`'s].
    #[arg(long, value_name = "QPS", default_value_t = ClientLimits::default().qps)]
    kube_api_qps: f64,
    /// `weir run --kube-api-burst` of those rows [default: `weir run`'s].
    #[arg(long, value_name = "N", default_value_t = ClientLimits::default().burst)]
    kube_api_burst: u32,
    /// Measure only one side (no ratios).
    #[arg(long, value_enum)]
    only: Option<Side>,
    /// Also a warm-start row after each Blog row's cold one: `weir run` again with the compile
    /// cache the cold run filled (a restart with its cache volume).
    #[arg(long)]
    warm: bool,
    /// `weir run` replicas of the Blog rows, sharded (`--shard`) when more than one: each
    /// caches and reconciles its share. The row's RSS is their sum; each one's peak is printed.
    #[arg(long, default_value_t = 1)]
    replicas: usize,
}

/// Measurements other than the Blog rows.
#[derive(Debug, Subcommand)]
enum Mode {
    /// `weir run` serving the Blog beside the hostile plugin: a Blog's convergence, peak RSS
    /// and the log, idle and under every attack.
    Hostile(hostile::HostileArgs),
    /// The related index at 1,000 and 10,000 Blogs: parents enqueued (reconciles triggered) per
    /// related-object change, lookup time, and the memory the index holds.
    Related(related::RelatedArgs),
    /// Plugins from a registry: cold pull + compile and cached load per language, and the time
    /// from a new digest applied to the last of N Blogs updated.
    Delivery(delivery::DeliveryArgs),
    /// A hot swap on the shipped `weir run`: from a new Blog file in its plugin directory to the
    /// last of N Blogs' children rewritten.
    Swap(swap::SwapArgs),
    /// Sharded replicas serving N Blogs, one killed at a time: from the kill to its Blogs
    /// (edited then) reconciled again by the others; the median of the kills.
    Failover(failover::FailoverArgs),
    /// Blogs edited at a steady rate on one `weir run`, then on three `--shard` replicas: the
    /// p50/p90/p99 time from an edit to its child changed.
    Rate(rate::RateArgs),
    /// N Blogs Ready, then edited at a steady rate, each edit changing one child: requests,
    /// reads, writes by verb and 409s per edit, from the emulator's request log, for `weir run`
    /// and the native twin.
    Edits(edits::EditsArgs),
    /// One `weir run --clusters` engaging N secure member clusters with a few children each:
    /// the host's memory per engaged idle cluster, the time to engage them all, and a rotation
    /// of every member's credentials (the lists it caused).
    Members(members::MembersArgs),
    /// Two tenants on one `weir run`: team A's p50/p90/p99 time from an edit to its child
    /// changed, quiet and while team B's plugin floods (requeues at once, churns children).
    Tenants(tenants::TenantsArgs),
    /// Minutes of churn, host kills, plugin swaps and API faults on one `weir run` serving
    /// 1,000 Blogs: its RSS per lifetime, the slope, and the convergence check at the end.
    Soak(soak::SoakArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Side {
    Weir,
    Native,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Creates `per_target` Blogs for each target and measures until all are Ready, then over
/// two resyncs.
async fn measure(label: &str, setup: &Setup, targets: &[Target], per_target: usize) -> Result<Row> {
    let config = EmulatorConfig {
        watch_history: 200_000,
        // Every request of the run is counted: a Blog costs about seven, and the bench's own
        // creates come on top (the default keeps the newest 100,000).
        request_log: (targets.len() * per_target * 20).max(EmulatorConfig::default().request_log),
        ..EmulatorConfig::default()
    };
    let emulator = emulator_for(targets, config).await?;
    let dir = tempfile::Builder::new().prefix("weir-bench-").tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let (mut children, ops) =
        start(label, setup, targets, &emulator, dir.path(), &kubeconfig).await?;

    let bench = bench_client(&emulator)?;
    let apis: Vec<Api<DynamicObject>> = targets
        .iter()
        .map(|t| Api::namespaced_with(bench.clone(), &t.namespace, &t.kind.api_resource()))
        .collect();
    let mut readiness = Readiness::watch(&apis);
    let first = apis.first().context("a row with no Blogs to create")?;
    let written = cluster::StoreWrites::since(first).await?;
    let stored = stored_writes::Since::now(&emulator);
    let emulator_cpu = controllers::cpu_seconds(std::process::id());
    let started = Instant::now();
    for (api, t) in apis.iter().zip(targets) {
        create_blogs(api, &t.kind, per_target, 2).await?;
    }
    let blogs = targets.len() * per_target;
    readiness
        .until(label, blogs, &mut children, started)
        .await?;
    let seconds = started.elapsed().as_secs_f64();
    drop(readiness);
    // The emulator's side of the run: its simulation and request handling share this process
    // (with the bench's creates and watch), so its CPU time says what the run cost it.
    println!(
        "{label}: this process (the emulator) {:.1} CPU s while converging, {} writes stored",
        controllers::cpu_seconds(std::process::id()) - emulator_cpu,
        written.count(first).await?,
    );
    // The measured controller's requests: not the bench's creates and watch.
    let log: Vec<_> = emulator
        .requests()
        .into_iter()
        .filter(|r| r.user_agent.as_deref() != Some(BENCH_AGENT))
        .collect();
    let requests = log.len();
    stored.print(label, &emulator, blogs, &log);
    if std::env::var_os("WEIR_BENCH_DEBUG").is_some() {
        print_writes(label, &log);
    }

    // Quiet period: let the last echoes settle, then count writes over two resyncs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    emulator.clear_requests();
    tokio::time::sleep(Duration::from_secs(RESYNC_SECS * 2 + 1)).await;
    let quiet = emulator.requests();
    let resync_writes = quiet
        .iter()
        .filter(|r| r.is_write() && !r.path.contains("/leases"))
        .count();
    let rss_mib = children.peak_rss_mib();
    let rest_rss_mib = children.rss_mib();
    let (anon, file) = children.rss_split_mib();
    println!("{label}: RSS at rest {anon:.1} MiB anonymous + {file:.1} MiB file-backed");
    let cpu = children.cpu_seconds_each();
    let shown: Vec<String> = cpu.iter().map(|s| format!("{s:.1}")).collect();
    println!(
        "{label}: CPU seconds (user + system) of each process {}",
        shown.join(", ")
    );
    // `weir run`'s own gauges: the row's are the first replica's; sharded, each replica apart
    // too, with its peak, its CPU time and whether it is the coordinator (the leader, whose
    // `/plugins` shows its pass).
    let peaks = children.peak_rss_each_mib();
    let mut memory = None;
    let mut reconciles = 0.0;
    for (i, addr) in ops.iter().enumerate() {
        let metrics = weir_e2e::weir_run::ops_get(*addr, "/metrics").await?;
        let gauges = memory::Breakdown::of(&metrics);
        reconciles += memory::sum(&metrics, "weir_reconciles_total");
        if ops.len() > 1 {
            let listed = weir::listing::fetch(&addr.to_string()).await?;
            let coordinating = listed
                .first()
                .and_then(|p| p.shard.as_ref())
                .is_some_and(|s| s.coordinating);
            println!(
                "{label}: replica {i}{}: peak RSS {:.1} MiB, CPU {:.1} s, {}",
                if coordinating { " (coordinator)" } else { "" },
                peaks.get(i).copied().unwrap_or_default(),
                cpu.get(i).copied().unwrap_or_default(),
                gauges.line()
            );
        }
        memory.get_or_insert(gauges);
    }
    if !ops.is_empty() {
        println!(
            "{label}: {reconciles:.0} reconciles ({:.2} per Blog)",
            reconciles / blogs as f64
        );
    }
    drop(children);
    emulator.shutdown().await;
    Ok(Row {
        system: label.to_owned(),
        blogs,
        seconds,
        requests_per_blog: requests as f64 / blogs as f64,
        resync_writes,
        rss_mib,
        rest_rss_mib,
        memory,
    })
}

/// The `weir` binary measured: `--weir PATH`, or target/release/weir, which must exist.
fn weir_binary(flag: Option<PathBuf>) -> Result<PathBuf> {
    built(
        flag.unwrap_or_else(|| root().join("target/release/weir")),
        BUILD,
    )
}

/// The command that builds what the bench runs.
const BUILD: &str = "build it with `cargo build --release -p weir -p weir-e2e --bin weir --bin weir-bench --bin weir-twin`";

/// The twin's binary: `weir-twin` beside this one.
fn twin_binary() -> Result<PathBuf> {
    built(std::env::current_exe()?.with_file_name("weir-twin"), BUILD)
}

/// `path`, or an error naming the command that builds it.
fn built(path: PathBuf, how: &str) -> Result<PathBuf> {
    if path.exists() {
        Ok(path)
    } else {
        bail!("{} is missing: {how}", path.display())
    }
}

/// The row of `kinds` distinct Blog components (`plugins/build.sh ten` or `fifty`) with `each`
/// Blogs in a namespace of their own: one `weir run` serving all of them, and (if `twins`) one
/// twin process per namespace.
async fn many(
    kinds: usize,
    each: usize,
    weir: Option<(&Path, ClientLimits)>,
    twins: bool,
) -> Result<(Option<Row>, Option<Row>)> {
    let namespaces: Vec<String> = (0..kinds).map(|n| format!("bench-{n}")).collect();
    let w = match weir {
        Some((binary, limits)) => {
            let plugins = (0..kinds)
                .map(|n| {
                    built(
                        root().join(format!("target/plugins/copies/blog{n}.wasm")),
                        "run `plugins/build.sh ten` (or `fifty`) first",
                    )
                })
                .collect::<Result<Vec<_>>>()?;
            let targets: Vec<Target> = (0..kinds)
                .map(|n| Target {
                    kind: blog_kind(Some(n)),
                    copy: Some(n),
                    namespace: namespaces[n].clone(),
                })
                .collect();
            let cache = tempfile::Builder::new()
                .prefix("weir-bench-cache-")
                .tempdir()?;
            let setup = Setup::Weir {
                binary: binary.to_owned(),
                plugins,
                cache: cache.path().to_owned(),
                replicas: 1,
                limits,
            };
            let label = format!("weir run, {kinds} plugins");
            Some(measure(&label, &setup, &targets, each).await?)
        }
        None => None,
    };
    let t = if twins {
        let targets: Vec<Target> = namespaces
            .iter()
            .map(|ns| Target {
                kind: blog_kind(None),
                copy: None,
                namespace: ns.clone(),
            })
            .collect();
        let setup = Setup::Twins {
            namespaces: namespaces.into_iter().map(Some).collect(),
        };
        let label = format!("{kinds} native twins (sum)");
        Some(measure(&label, &setup, &targets, each).await?)
    } else {
        None
    };
    Ok((w, t))
}

async fn bench(cli: Cli) -> Result<()> {
    let limits = ClientLimits {
        qps: cli.kube_api_qps.max(0.0),
        burst: cli.kube_api_burst,
    };
    let measures = |side| cli.only.is_none_or(|only| only == side);
    let weir = if measures(Side::Weir) {
        Some(weir_binary(cli.weir.clone())?)
    } else {
        None
    };
    let blog = built(
        root().join("target/plugins/blog.wasm"),
        "run plugins/build.sh first",
    )?;
    let mut rows = Vec::new();
    let mut pairs = Vec::new();
    // (Blogs, peak RSS) of each cold one-plugin `weir run` row.
    let mut one_plugin = Vec::new();
    let blogs = if cli.ten_only {
        &[][..]
    } else {
        &cli.blogs[..]
    };
    for &n in blogs {
        let targets = [Target {
            kind: blog_kind(None),
            copy: None,
            namespace: "default".into(),
        }];
        let cache = tempfile::Builder::new()
            .prefix("weir-bench-cache-")
            .tempdir()?;
        let mut warm = None;
        let w = match &weir {
            Some(binary) => {
                let setup = Setup::Weir {
                    binary: binary.clone(),
                    plugins: vec![blog.clone()],
                    cache: cache.path().to_owned(),
                    replicas: cli.replicas.max(1),
                    limits,
                };
                let label = match cli.replicas {
                    0 | 1 => "weir run".to_owned(),
                    r => format!("weir run, {r} sharded"),
                };
                let cold = measure(&label, &setup, &targets, n).await?;
                if cli.replicas <= 1 {
                    one_plugin.push((n, cold.rss_mib));
                }
                if cli.warm {
                    warm = Some(measure("weir run, warm cache", &setup, &targets, n).await?);
                }
                Some(cold)
            }
            None => None,
        };
        let t = if measures(Side::Native) {
            let setup = Setup::Twins {
                namespaces: vec![None],
            };
            Some(measure("native twin", &setup, &targets, n).await?)
        } else {
            None
        };
        let twin = t.is_some();
        push(&mut rows, &mut pairs, w, t);
        if let Some(warm) = warm {
            rows.push(warm);
            if twin {
                pairs.push((rows.len() - 1, rows.len() - 2));
            }
        }
    }
    // Each many-plugin row beside the one-plugin row of as many Blogs: the peak RSS that each
    // plugin past the first adds.
    let mut per_plugin = Vec::new();
    for (kinds, each) in [(10, cli.ten), (50, cli.fifty)] {
        if let Some(each) = each {
            let (w, t) = many(
                kinds,
                each,
                weir.as_deref().map(|w| (w, limits)),
                measures(Side::Native),
            )
            .await?;
            let one = w.as_ref().and_then(|w| {
                let one = one_plugin.iter().find(|(blogs, _)| *blogs == w.blogs)?;
                Some((w, one))
            });
            if let Some((w, (blogs, one_mib))) = one {
                per_plugin.push(format!(
                    "{}: {:.2} MiB of peak RSS per plugin past the first (against one plugin with {blogs} Blogs)",
                    w.system,
                    (w.rss_mib - one_mib) / (kinds - 1) as f64,
                ));
            }
            push(&mut rows, &mut pairs, w, t);
        }
    }
    println!(
        "client limits: weir run {limits}{}; native twin: none (a plain kube-rs client)",
        match (limits.qps > 0.0, limits == ClientLimits::default()) {
            (false, _) => "",
            (true, true) => ", its default, shared fairly between plugins",
            (true, false) => ", shared fairly between plugins",
        }
    );
    print(&rows);
    for row in &rows {
        if let Some(memory) = &row.memory {
            println!("{} × {}: {}", row.system, row.blogs, memory.line());
        }
    }
    for line in &per_plugin {
        println!("{line}");
    }
    if !pairs.is_empty() {
        let pairs: Vec<(&Row, &Row)> = pairs.iter().map(|&(a, b)| (&rows[a], &rows[b])).collect();
        print_ratios(&pairs);
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    // `RUST_LOG` shows what the bench's emulator (and a served twin) logs.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    match cli.mode {
        Some(Mode::Hostile(args)) => hostile::run(args).await,
        Some(Mode::Related(args)) => related::run(args),
        Some(Mode::Delivery(args)) => delivery::run(args).await,
        Some(Mode::Swap(args)) => swap::run(args).await,
        Some(Mode::Soak(args)) => soak::run(args).await,
        Some(Mode::Failover(args)) => failover::run(args).await,
        Some(Mode::Rate(args)) => rate::run(args).await,
        Some(Mode::Edits(args)) => edits::run(args).await,
        Some(Mode::Members(args)) => members::run(args).await,
        Some(Mode::Tenants(args)) => tenants::run(args).await,
        None => bench(cli).await,
    }
}
