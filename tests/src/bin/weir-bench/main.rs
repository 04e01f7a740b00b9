//! The host benchmark: the shipped `weir run` binary against the native twin, each a child
//! process of this one, on N Blogs created at once on the emulator; prints a table.
//!
//! ```text
//! cargo build --release -p weir --bin weir && cargo build --release -p weir-e2e --bin weir-bench
//! plugins/build.sh ten      # the Blog plugin, and the ten Blog kinds of the ten-plugin row
//! target/release/weir-bench --blogs 1000 --blogs 10000 --ten 100
//! target/release/weir-bench hostile   # the Blog beside the hostile plugin (see `hostile`)
//! target/release/weir-bench soak --minutes 10   # churn, kills, swaps, faults; RSS slope, convergence (`soak`)
//! ```
//!
//! The emulator runs in this process; its request log counts the children's requests (this
//! process's own creates and polls are subtracted). Each child's peak RSS is its own `VmHWM`.
//! `weir-bench serve native KUBECONFIG [--namespace NS]` is the twin's process (internal).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use weir_emulator::{EmulatorConfig, RequestCursor};

mod cluster;
mod delivery;
mod hostile;
mod memory;
mod related;
mod soak;
mod table;

use self::cluster::{Target, blog_kind, emulator_for, is_ready};
use self::table::{Row, print, print_ratios, print_writes, push};

const RESYNC_SECS: u64 = 3;
const WORKERS: usize = 8;
/// Kinds (Weir) or twin processes of the ten-plugin row.
const TEN: usize = 10;

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
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
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
    /// Minutes of churn, host kills, plugin swaps and API faults on one `weir run` serving
    /// 1,000 Blogs: its RSS per lifetime, the slope, and the convergence check at the end.
    Soak(soak::SoakArgs),
    /// Runs the native twin (the benchmark's own child process).
    #[command(hide = true)]
    Serve {
        /// Which controller (only the twin runs from this binary; Weir is `weir run`).
        system: Served,
        /// The emulator's kubeconfig.
        kubeconfig: PathBuf,
        /// Watch and reconcile only this namespace.
        #[arg(long)]
        namespace: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Served {
    Native,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Side {
    Weir,
    Native,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The controller under test and what it serves.
enum Setup {
    /// One `weir run` process over these plugin components.
    Weir {
        binary: PathBuf,
        plugins: Vec<PathBuf>,
        /// The compile cache: empty for a cold start (a new pod), filled for a warm one.
        cache: PathBuf,
        /// Processes; more than one are sharded (`--shard`), each a member of its own name.
        replicas: usize,
    },
    /// One twin process per namespace (`None`: one twin over the whole cluster).
    Twins { namespaces: Vec<Option<String>> },
}

/// The children under test; killed when dropped, so no error path leaves one behind.
struct Children(Vec<Child>);

impl Children {
    /// Sum of the children's peak resident set sizes.
    fn peak_rss_mib(&self) -> f64 {
        self.0.iter().map(|c| status_mib(c.id(), "VmHWM:")).sum()
    }

    /// Each child's peak resident set size.
    fn peak_rss_each_mib(&self) -> Vec<f64> {
        self.0
            .iter()
            .map(|c| status_mib(c.id(), "VmHWM:"))
            .collect()
    }

    /// Sum of the children's resident set sizes now.
    fn rss_mib(&self) -> f64 {
        self.0.iter().map(|c| status_mib(c.id(), "VmRSS:")).sum()
    }

    /// Fails if a child has exited (a bad flag, a failed start).
    fn check_running(&mut self) -> Result<()> {
        for child in &mut self.0 {
            if let Some(status) = child.try_wait()? {
                bail!("the controller under test exited early: {status}");
            }
        }
        Ok(())
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A size line (`VmHWM:`, `VmRSS:`) of a process's status, in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// Starts the controller(s) of `setup` against the emulator of `kubeconfig`; for `weir run`,
/// also the address of its (the first replica's) ops server (`/metrics`).
fn spawn(
    setup: &Setup,
    dir: &Path,
    kubeconfig: &Path,
) -> Result<(Children, Option<std::net::SocketAddr>)> {
    match setup {
        Setup::Weir {
            binary,
            plugins,
            cache,
            replicas,
        } => {
            let plugin_dir = dir.join("plugins");
            std::fs::create_dir_all(&plugin_dir)?;
            for p in plugins {
                let name = p.file_name().context("plugin file name")?;
                std::fs::copy(p, plugin_dir.join(name))
                    .with_context(|| format!("copying {}", p.display()))?;
            }
            let mut children = Children(Vec::new());
            let mut first_ops = None;
            for replica in 0..*replicas {
                // A port free now, for the ops server.
                let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
                first_ops.get_or_insert(ops);
                let mut command = Command::new(binary);
                command
                    .args(["--log", "warn", "--cache-dir"])
                    .arg(cache)
                    .args(["run", "--plugins"])
                    .arg(&plugin_dir)
                    .arg("--kubeconfig")
                    .arg(kubeconfig)
                    .args(["--workers", &WORKERS.to_string()])
                    .args(["--resync-secs", &RESYNC_SECS.to_string()])
                    .args(["--listen", &ops.to_string()]);
                if *replicas > 1 {
                    let identity = format!("bench-{replica}");
                    command.args(["--shard", "--identity", &identity]);
                }
                let child = command
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .with_context(|| format!("starting {}", binary.display()))?;
                children.0.push(child);
            }
            Ok((children, first_ops))
        }
        Setup::Twins { namespaces } => {
            let mut children = Children(Vec::new());
            for ns in namespaces {
                let mut cmd = Command::new(std::env::current_exe()?);
                cmd.args(["serve", "native"]).arg(kubeconfig);
                if let Some(ns) = ns {
                    cmd.args(["--namespace", ns]);
                }
                let mut child = cmd
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()?;
                let stdout = child.stdout.take().context("twin stdout")?;
                children.0.push(child);
                let mut line = String::new();
                BufReader::new(stdout).read_line(&mut line)?;
                if !line.starts_with("STARTED") {
                    bail!("the native twin did not start: {line:?}");
                }
            }
            Ok((children, None))
        }
    }
}

/// The path suffix of the parent watch each target needs before the clock starts.
fn watch_suffix(setup: &Setup, target: &Target) -> String {
    match setup {
        Setup::Twins { namespaces } if namespaces.iter().any(Option::is_some) => {
            format!("/namespaces/{}/{}", target.namespace, target.kind.plural)
        }
        _ => format!("/{}", target.kind.plural),
    }
}

/// Creates `per_target` Blogs for each target and measures until all are Ready, then over
/// two resyncs.
async fn measure(label: &str, setup: &Setup, targets: &[Target], per_target: usize) -> Result<Row> {
    let config = EmulatorConfig {
        watch_history: 200_000,
        ..EmulatorConfig::default()
    };
    let emulator = emulator_for(targets, config).await?;
    let client = emulator.client();
    let dir = tempfile::Builder::new().prefix("weir-bench-").tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let (mut children, ops) = spawn(setup, dir.path(), &kubeconfig)?;
    // Watching means started: wait until every parent kind has a watch open.
    let deadline = Instant::now() + Duration::from_secs(120);
    let suffixes: Vec<String> = targets.iter().map(|t| watch_suffix(setup, t)).collect();
    let mut cursor = RequestCursor::default();
    let mut watching = vec![false; suffixes.len()];
    loop {
        for r in emulator.requests_since(&mut cursor) {
            for (seen, s) in watching.iter_mut().zip(&suffixes) {
                *seen |= r.is_watch() && r.path.ends_with(s.as_str());
            }
        }
        if watching.iter().all(|seen| *seen) {
            break;
        }
        children.check_running()?;
        if Instant::now() > deadline {
            bail!("{label} never watched its parents");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    emulator.clear_requests();

    let started = Instant::now();
    let mut ours = 0usize;
    let apis: Vec<(Api<DynamicObject>, &Target)> = targets
        .iter()
        .map(|t| {
            let api = Api::namespaced_with(client.clone(), &t.namespace, &t.kind.api_resource());
            (api, t)
        })
        .collect();
    for (api, t) in &apis {
        futures::stream::iter(0..per_target)
            .map(|i| {
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": t.kind.api_version(), "kind": t.kind.kind,
                    "metadata": {"name": format!("{}-{i}", t.kind.plural)},
                    "spec": {"title": format!("Blog {i}"), "replicas": 2},
                }))
                .unwrap_or_else(|_| DynamicObject::new("invalid", &t.kind.api_resource()));
                async move { api.create(&PostParams::default(), &obj).await }
            })
            .buffer_unordered(64)
            .try_collect::<Vec<_>>()
            .await?;
        ours += per_target;
    }
    let blogs = targets.len() * per_target;
    loop {
        let mut ready = 0;
        for (api, _) in &apis {
            let list = api.list(&Default::default()).await?;
            ready += list.items.iter().filter(|o| is_ready(o)).count();
            ours += 1;
        }
        if ready == blogs {
            break;
        }
        children.check_running()?;
        if started.elapsed() > Duration::from_secs(900) {
            bail!("{label}: only {ready} of {blogs} Blogs Ready after 15 minutes");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    let log = emulator.requests();
    let requests = log.len().saturating_sub(ours);
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
    if children.0.len() > 1 {
        let each: Vec<String> = children
            .peak_rss_each_mib()
            .iter()
            .map(|m| format!("{m:.0}"))
            .collect();
        println!("{label}: peak RSS of each replica {} MiB", each.join(", "));
    }
    let memory = match ops {
        Some(addr) => Some(memory::Breakdown::read(addr).await?),
        None => None,
    };
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

/// `path`, or an error naming the command that builds it.
fn built(path: PathBuf, how: &str) -> Result<PathBuf> {
    if path.exists() {
        Ok(path)
    } else {
        bail!("{} is missing: {how}", path.display())
    }
}

async fn bench(cli: Cli) -> Result<()> {
    let measures = |side| cli.only.is_none_or(|only| only == side);
    let weir = if measures(Side::Weir) {
        let path = cli
            .weir
            .clone()
            .unwrap_or_else(|| root().join("target/release/weir"));
        Some(built(
            path,
            "build it with `cargo build --release -p weir --bin weir`",
        )?)
    } else {
        None
    };
    let blog = built(
        root().join("target/plugins/blog.wasm"),
        "run plugins/build.sh first",
    )?;
    let ten_plugins = match cli.ten {
        Some(_) if weir.is_some() => (0..TEN)
            .map(|n| {
                built(
                    root().join(format!("target/plugins/ten/blog{n}.wasm")),
                    "run `plugins/build.sh ten` first",
                )
            })
            .collect::<Result<Vec<_>>>()?,
        _ => Vec::new(),
    };

    let mut rows = Vec::new();
    let mut pairs = Vec::new();
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
                };
                let label = match cli.replicas {
                    0 | 1 => "weir run".to_owned(),
                    r => format!("weir run, {r} sharded"),
                };
                let cold = measure(&label, &setup, &targets, n).await?;
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
    if let Some(each) = cli.ten {
        let namespaces: Vec<String> = (0..TEN).map(|n| format!("bench-{n}")).collect();
        let w = match &weir {
            Some(binary) => {
                let targets: Vec<Target> = (0..TEN)
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
                    binary: binary.clone(),
                    plugins: ten_plugins,
                    cache: cache.path().to_owned(),
                    replicas: 1,
                };
                Some(measure("weir run, 10 plugins", &setup, &targets, each).await?)
            }
            None => None,
        };
        let t = if measures(Side::Native) {
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
            Some(measure("10 native twins (sum)", &setup, &targets, each).await?)
        } else {
            None
        };
        push(&mut rows, &mut pairs, w, t);
    }
    println!(
        "client limits: weir run {} (its default, shared fairly between plugins); \
         native twin: none (a plain kube-rs client)",
        weir::client::ClientLimits::default()
    );
    print(&rows);
    for row in &rows {
        if let Some(memory) = &row.memory {
            println!("{} × {}: {}", row.system, row.blogs, memory.line());
        }
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
    match cli.mode {
        Some(Mode::Hostile(args)) => hostile::run(args).await,
        Some(Mode::Related(args)) => related::run(args),
        Some(Mode::Delivery(args)) => delivery::run(args).await,
        Some(Mode::Soak(args)) => soak::run(args).await,
        Some(Mode::Serve {
            system: Served::Native,
            kubeconfig,
            namespace,
        }) => {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
                .with_writer(std::io::stderr)
                .try_init();
            // A plain kube client, as a careful kube-rs user builds it: kube-rs has no
            // client-side rate limit (the API server's own fairness and 429s pace it).
            let kc = kube::config::Kubeconfig::read_from(&kubeconfig)?;
            let config = kube::Config::from_custom_kubeconfig(
                kc,
                &kube::config::KubeConfigOptions::default(),
            )
            .await?;
            let client = kube::Client::try_from(config)?;
            println!("STARTED");
            let resync = Duration::from_secs(RESYNC_SECS);
            weir_e2e::native_twin::run(client, namespace.as_deref(), WORKERS as u16, resync).await;
            Ok(())
        }
        None => bench(cli).await,
    }
}
