//! The controllers under test as child processes of the bench: `weir run` (one, or several
//! sharded replicas) or native twins, killed when dropped, and their memory from `/proc`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use weir_e2e::host::RunArgs;
use weir_emulator::{Emulator, RequestCursor};

use super::cluster::Target;
use super::{RESYNC_SECS, WORKERS, twin_binary};

/// The controller under test and what it serves.
pub(crate) enum Setup {
    /// One `weir run` process over these plugin components.
    Weir {
        binary: PathBuf,
        plugins: Vec<PathBuf>,
        /// The compile cache: empty for a cold start (a new pod), filled for a warm one.
        cache: PathBuf,
        /// Processes; more than one are sharded (`--shard`), each a member of its own name.
        replicas: usize,
        /// `--kube-api-qps` and `--kube-api-burst`.
        limits: weir::client::ClientLimits,
    },
    /// One twin process per namespace (`None`: one twin over the whole cluster).
    Twins { namespaces: Vec<Option<String>> },
}

/// The children under test; killed when dropped, so no error path leaves one behind.
pub(crate) struct Children(pub(crate) Vec<Child>);

impl Children {
    /// Sum of the children's peak resident set sizes.
    pub(crate) fn peak_rss_mib(&self) -> f64 {
        self.0.iter().map(|c| status_mib(c.id(), "VmHWM:")).sum()
    }

    /// Each child's peak resident set size.
    pub(crate) fn peak_rss_each_mib(&self) -> Vec<f64> {
        self.0
            .iter()
            .map(|c| status_mib(c.id(), "VmHWM:"))
            .collect()
    }

    /// Each child's CPU time so far, user and system, in seconds: three replicas on two cores
    /// share them, so their time to Ready alone does not say what each one costs.
    pub(crate) fn cpu_seconds_each(&self) -> Vec<f64> {
        self.0.iter().map(|c| cpu_seconds(c.id())).collect()
    }

    /// Sum of the children's resident set sizes now.
    pub(crate) fn rss_mib(&self) -> f64 {
        self.0.iter().map(|c| status_mib(c.id(), "VmRSS:")).sum()
    }

    /// Sums of the children's anonymous (private) and file-backed resident sizes now: compiled
    /// plugin code mapped from the compile cache is file-backed, shared and reclaimable.
    pub(crate) fn rss_split_mib(&self) -> (f64, f64) {
        self.0.iter().fold((0.0, 0.0), |(anon, file), c| {
            let status = status_of(c.id());
            (
                anon + field_mib(&status, "RssAnon:"),
                file + field_mib(&status, "RssFile:"),
            )
        })
    }

    /// Fails if a child has exited (a bad flag, a failed start).
    pub(crate) fn check_running(&mut self) -> Result<()> {
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
    field_mib(&status_of(pid), field)
}

/// A process's `/proc/PID/status` (empty once it is gone).
fn status_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()
}

/// Clock ticks a second of the times in `/proc/PID/stat` (Linux's `USER_HZ`, 100 on every
/// architecture this bench runs on).
const USER_HZ: f64 = 100.0;

/// A process's user plus system CPU time (all its threads), in seconds; 0 once it is gone.
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces: the state is
    // the first, utime the 12th and stime the 13th (fields 14 and 15 of proc(5)).
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let ticks: f64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse::<f64>().ok())
        .sum();
    ticks / USER_HZ
}

/// A size line of a status text, in MiB.
fn field_mib(status: &str, field: &str) -> f64 {
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// Starts the controller(s) of `setup` against the emulator of `kubeconfig`; for `weir run`,
/// also the address of each replica's ops server (`/metrics`, `/plugins`), in the children's
/// order (none for twins).
pub(crate) fn spawn(
    setup: &Setup,
    dir: &Path,
    kubeconfig: &Path,
) -> Result<(Children, Vec<std::net::SocketAddr>)> {
    match setup {
        Setup::Weir {
            binary,
            plugins,
            cache,
            replicas,
            limits,
        } => {
            let plugin_dir = dir.join("plugins");
            std::fs::create_dir_all(&plugin_dir)?;
            for p in plugins {
                let name = p.file_name().context("plugin file name")?;
                std::fs::copy(p, plugin_dir.join(name))
                    .with_context(|| format!("copying {}", p.display()))?;
            }
            let mut children = Children(Vec::new());
            let mut each_ops = Vec::new();
            for replica in 0..*replicas {
                // A port free now, for the ops server.
                let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
                each_ops.push(ops);
                let mut args = RunArgs {
                    cache_dir: cache.clone(),
                    workers: Some(WORKERS),
                    resync_secs: Some(RESYNC_SECS),
                    listen: ops.to_string(),
                    ..RunArgs::plugins(&plugin_dir, kubeconfig)
                };
                args.extra = vec![
                    "--kube-api-qps".into(),
                    limits.qps.to_string().into(),
                    "--kube-api-burst".into(),
                    limits.burst.to_string().into(),
                ];
                if *replicas > 1 {
                    let identity = format!("bench-{replica}");
                    args.extra
                        .extend(["--shard", "--identity", &identity].map(Into::into));
                }
                let child = args
                    .command(binary)?
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .with_context(|| format!("starting {}", binary.display()))?;
                children.0.push(child);
            }
            Ok((children, each_ops))
        }
        Setup::Twins { namespaces } => {
            let mut children = Children(Vec::new());
            for ns in namespaces {
                let mut cmd = Command::new(twin_binary()?);
                cmd.arg(kubeconfig)
                    .args(["--workers", &WORKERS.to_string()])
                    .args(["--resync-secs", &RESYNC_SECS.to_string()]);
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
            Ok((children, Vec::new()))
        }
    }
}

/// Starts the controller(s) of `setup` (as [`spawn`] does) and waits until each target's parent
/// kind is watched, then a little longer, and clears the emulator's request log: watching means
/// started, and what is logged from then on is the measured work.
pub(crate) async fn start(
    label: &str,
    setup: &Setup,
    targets: &[Target],
    emulator: &Emulator,
    dir: &Path,
    kubeconfig: &Path,
) -> Result<(Children, Vec<std::net::SocketAddr>)> {
    let (mut children, ops) = spawn(setup, dir, kubeconfig)?;
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
    Ok((children, ops))
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
