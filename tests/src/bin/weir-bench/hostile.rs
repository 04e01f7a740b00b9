//! `weir-bench hostile`: the shipped `weir run` binary serving the Blog beside the hostile
//! plugin, measured idle and while every attack runs.
//!
//! One run: a Blog's convergence on the idle host, then the attacks of `weir_e2e::hostile`
//! (the list the end-to-end test judges), a few seconds for them to get going, and a second
//! Blog's convergence among them; the process's peak RSS (`VmHWM`) after each phase; and from
//! its captured stdout and stderr the longest line, the bytes logged per second and whether
//! the line `log-forge` forges ever appears as a line of the host's own.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use weir::plugin::ResourceKind;
use weir_e2e::host::RunArgs;
use weir_e2e::hostile::{self as attacks, FORGED_LINE};
use weir_e2e::kinds;
use weir_emulator::{Emulator, EmulatorConfig};

use super::{Children, Target, blog_kind, built, emulator_for, is_ready, root, weir_binary};

/// Arguments of `weir-bench hostile`.
#[derive(Debug, clap::Args)]
pub struct HostileArgs {
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
    /// Seconds the attacks run before the second Blog is created.
    #[arg(long, default_value_t = 5)]
    settle_secs: u64,
    /// Seconds from a Blog's creation over which the log is counted (and the phase lasts).
    #[arg(long, default_value_t = 10)]
    window_secs: u64,
    /// Also write the captured log of `weir run` to this file.
    #[arg(long, value_name = "FILE")]
    keep_log: Option<PathBuf>,
}

const NAMESPACE: &str = "default";
/// How long a Blog may take before the run fails.
const BLOG_BUDGET: Duration = Duration::from_secs(60);

/// Every line the child wrote to stdout or stderr, with when it arrived.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<(Instant, String)>>>);

impl Captured {
    /// Reads `stream` line by line on a thread of its own until it closes.
    fn follow(&self, stream: impl Read + Send + 'static) {
        let lines = self.0.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stream);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let text = String::from_utf8_lossy(&line)
                    .trim_end_matches('\n')
                    .to_owned();
                lines
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((Instant::now(), text));
                line.clear();
            }
        });
    }

    fn lines(&self) -> Vec<(Instant, String)> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What the log of one phase shows.
struct LogFigures {
    bytes_per_second: f64,
    hostile_bytes_per_second: f64,
    longest: usize,
}

/// Lines that arrived in `[from, from + window)`.
fn log_figures(lines: &[(Instant, String)], from: Instant, window: Duration) -> LogFigures {
    let inside: Vec<&String> = lines
        .iter()
        .filter(|(t, _)| *t >= from && t.duration_since(from) < window)
        .map(|(_, l)| l)
        .collect();
    let bytes = |l: &&String| l.len() + 1;
    let hostile: usize = inside
        .iter()
        .filter(|l| l.contains("plugin log") && l.contains("hostile@"))
        .map(bytes)
        .sum();
    LogFigures {
        bytes_per_second: inside.iter().map(bytes).sum::<usize>() as f64 / window.as_secs_f64(),
        hostile_bytes_per_second: hostile as f64 / window.as_secs_f64(),
        longest: inside.iter().map(|l| l.len()).max().unwrap_or(0),
    }
}

/// What became of `log-forge`'s line: lines that look like the host's own, and lines that
/// carry its text escaped inside a plugin's log event.
fn forgeries(lines: &[(Instant, String)]) -> (usize, usize) {
    let stamp = FORGED_LINE.split_whitespace().next().unwrap_or(FORGED_LINE);
    let forged = lines
        .iter()
        .filter(|(_, l)| l.starts_with(stamp) || l.contains(['\r', '\x1b']))
        .count();
    let escaped = lines
        .iter()
        .filter(|(_, l)| l.contains("plugin log") && l.contains(&format!("\\n{FORGED_LINE}")))
        .count();
    (forged, escaped)
}

/// Applies the CRD the built plugin `name`'s `describe()` ships.
pub(super) async fn apply_crd(client: &kube::Client, name: &str) -> Result<()> {
    let plugin = weir_e2e::plugin(name)?;
    let text = plugin
        .info()
        .crd
        .clone()
        .with_context(|| format!("the {name} plugin ships no CRD"))?;
    let crd: Value =
        weir::yaml::from_str(&text).with_context(|| format!("parsing the {name} plugin's CRD"))?;
    let name = crd["metadata"]["name"]
        .as_str()
        .context("CRD without a name")?;
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ResourceKind {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
            namespaced: false,
        }
        .api_resource(),
    );
    crds.patch(
        name,
        &PatchParams::apply("bench").force(),
        &Patch::Apply(&crd),
    )
    .await?;
    Ok(())
}

/// Creates a Blog and waits until it is Ready with its ConfigMap, Deployment and Service.
async fn converge(emulator: &Emulator, children: &mut Children, name: &str) -> Result<Duration> {
    let client = emulator.client();
    let kind = blog_kind(None);
    let blogs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &kind.api_resource());
    let blog: DynamicObject = serde_json::from_value(json!({
        "apiVersion": kind.api_version(), "kind": kind.kind,
        "metadata": {"name": name},
        "spec": {"title": name, "replicas": 1},
    }))?;
    let started = Instant::now();
    blogs.create(&PostParams::default(), &blog).await?;
    let owned = [kinds::config_map(), kinds::deployment(), kinds::service()];
    loop {
        let blog = blogs.get(name).await?;
        if is_ready(&blog) {
            let uid = blog.metadata.uid.clone().unwrap_or_default();
            let mut found = 0;
            for kind in &owned {
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), NAMESPACE, &kind.api_resource());
                found += api
                    .list(&ListParams::default())
                    .await?
                    .items
                    .iter()
                    .filter(|c| {
                        let mut refs = c.metadata.owner_references.iter().flatten();
                        refs.any(|r| r.controller == Some(true) && r.uid == uid)
                    })
                    .count();
            }
            if found == owned.len() {
                return Ok(started.elapsed());
            }
        }
        children.check_running()?;
        if started.elapsed() > BLOG_BUDGET {
            bail!("the Blog {name} was not Ready with its children after {BLOG_BUDGET:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Starts `weir run` on `plugins` with its stdout and stderr captured (`--log info`, so the
/// plugins' lines reach the log and only the host's caps hold them back; no colours).
fn spawn(
    binary: &Path,
    dir: &Path,
    plugins: &Path,
    kubeconfig: &Path,
) -> Result<(Children, Captured)> {
    let cache = dir.join("cache");
    // The compile cache warmed first, as on a restarted pod: the peak is the host's, not Cranelift's.
    let warmed = Command::new(binary)
        .arg("--cache-dir")
        .arg(&cache)
        .args(["rbac", "--skip-refused", "--plugins"])
        .arg(plugins)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("starting {}", binary.display()))?;
    if !warmed.success() {
        eprintln!("warming the compile cache failed ({warmed}); the peaks include compiling");
    }
    let args = RunArgs {
        cache_dir: cache.clone(),
        log: "info".into(),
        ..RunArgs::plugins(plugins, kubeconfig)
    };
    let mut child = args
        .command(binary)?
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let captured = Captured::default();
    captured.follow(child.stdout.take().context("stdout of weir run")?);
    captured.follow(child.stderr.take().context("stderr of weir run")?);
    Ok((Children(vec![child]), captured))
}

/// One phase's figures.
struct Phase {
    converged: Duration,
    rss_mib: f64,
    log: LogFigures,
}

/// Runs the measurement and prints its table.
pub async fn run(args: HostileArgs) -> Result<()> {
    let binary = weir_binary(args.weir)?;
    let dir = tempfile::Builder::new().prefix("weir-bench-").tempdir()?;
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins)?;
    for name in attacks::plugin_files() {
        let from = built(
            root().join("target/plugins").join(&name),
            "run plugins/build.sh first",
        )?;
        std::fs::copy(&from, plugins.join(&name))?;
    }
    let window = Duration::from_secs(args.window_secs);

    let target = Target {
        kind: blog_kind(None),
        copy: None,
        namespace: NAMESPACE.into(),
    };
    let emulator = emulator_for(std::slice::from_ref(&target), EmulatorConfig::default()).await?;
    let client = emulator.client();
    apply_crd(&emulator.client(), "hostile").await?;
    let other = attacks::user_objects(&client, NAMESPACE).await?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;

    let (mut children, captured) = spawn(&binary, dir.path(), &plugins, &kubeconfig)?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !["/blogs", "/attacks"].iter().all(|s| {
        emulator
            .requests()
            .iter()
            .any(|r| r.is_watch() && r.path.ends_with(s))
    }) {
        children.check_running()?;
        if Instant::now() > deadline {
            bail!("weir run never watched the Blogs and the Attacks");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Idle: a Blog, then the rest of the window.
    let idle_from = Instant::now();
    let converged = converge(&emulator, &mut children, "idle").await?;
    tokio::time::sleep(window.saturating_sub(idle_from.elapsed())).await;
    let idle = Phase {
        converged,
        rss_mib: children.peak_rss_mib(),
        log: log_figures(&captured.lines(), idle_from, window),
    };

    // Under attack: every attack, a few seconds, then a Blog and the rest of the window.
    let api_server = attacks::host_port(&emulator.url());
    let launched_at = Instant::now();
    let launched = attacks::launch(&client, NAMESPACE, &other, &api_server, BLOG_BUDGET).await?;
    let running = launched.len() + attacks::VARIANTS.len();
    tokio::time::sleep(Duration::from_secs(args.settle_secs)).await;
    let attacked_from = Instant::now();
    let converged = converge(&emulator, &mut children, "survivor").await?;
    tokio::time::sleep(window.saturating_sub(attacked_from.elapsed())).await;
    children.check_running()?;
    let lines = captured.lines();
    let attacked = Phase {
        converged,
        rss_mib: children.peak_rss_mib(),
        log: log_figures(&lines, attacked_from, window),
    };
    let attacked_for = launched_at.elapsed();
    let since_launch = log_figures(&lines, launched_at, attacked_for);
    drop(children);
    emulator.shutdown().await;

    println!("weir run: {}", binary.display());
    print(&idle, &attacked, running, window);
    println!(
        "\nlog from the first attack on ({:.1} s): {:.0} bytes/s, {:.0} of them the hostile plugin's lines; longest line {} bytes",
        attacked_for.as_secs_f64(),
        since_launch.bytes_per_second,
        since_launch.hostile_bytes_per_second,
        since_launch.longest
    );
    if let Some(path) = &args.keep_log {
        let text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let longest = lines.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    let (forged, escaped) = forgeries(&lines);
    println!(
        "whole run: {} lines, longest {longest} bytes; lines shaped like log-forge's forged host line or carrying a raw CR/ESC: {forged}; plugin log lines carrying it escaped: {escaped}",
        lines.len()
    );
    if forged > 0 {
        bail!("log-forge forged {forged} host line(s)");
    }
    if escaped == 0 {
        bail!("log-forge's line never reached the log: the forgery check saw nothing to judge");
    }
    Ok(())
}

fn print(idle: &Phase, attacked: &Phase, running: usize, window: Duration) {
    let under = format!("under {running} attacks");
    println!(
        "| {:<44} | {:>10} | {:>17} | {:>6} |",
        "weir run", "idle host", under, "ratio"
    );
    println!("|{:-<46}|{:->12}|{:->19}|{:->8}|", "", "", "", "");
    let row = |what: &str, a: f64, b: f64, digits: usize| {
        let ratio = if a > 0.0 {
            format!("{:.2}x", b / a)
        } else {
            "-".into()
        };
        println!("| {what:<44} | {a:>10.digits$} | {b:>17.digits$} | {ratio:>6} |");
    };
    row(
        "a new Blog Ready with its 3 children, ms",
        idle.converged.as_secs_f64() * 1e3,
        attacked.converged.as_secs_f64() * 1e3,
        1,
    );
    row(
        "peak RSS (VmHWM) so far, MiB",
        idle.rss_mib,
        attacked.rss_mib,
        1,
    );
    let secs = window.as_secs();
    row(
        &format!("log bytes/s, {secs} s from the Blog's creation"),
        idle.log.bytes_per_second,
        attacked.log.bytes_per_second,
        0,
    );
    row(
        "  of which the hostile plugin's lines",
        idle.log.hostile_bytes_per_second,
        attacked.log.hostile_bytes_per_second,
        0,
    );
    row(
        &format!("longest log line in those {secs} s, bytes"),
        idle.log.longest as f64,
        attacked.log.longest as f64,
        0,
    );
}
