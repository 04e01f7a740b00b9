//! The shipped `weir run` binary as a child process serving the Blog (from a directory, or from
//! the cluster's `Plugin` objects): started, killed with SIGKILL or stopped with SIGTERM, started
//! again, its resident memory read.
//!
//! Its command line is built by [`RunArgs`], as every test and benchmark that starts a host
//! builds it ([`crate::host`]). By default a start uses the workspace's compile cache (`target/plugin-cache`, the
//! one the test engine fills), so a restart loads the precompiled Blog instead of compiling it
//! again. The process's stderr goes to a log file in the run's directory, appended across
//! restarts.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::host::RunArgs;
use crate::workspace_root;

/// One `weir run` process at a time, over a directory holding only the Blog plugin or over the
/// cluster's `Plugin` objects.
pub struct WeirRun {
    args: RunArgs,
    binary: PathBuf,
    plugins: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    starts: usize,
}

impl WeirRun {
    /// `target/debug/weir`, or an error saying how to build it.
    pub fn debug_binary() -> Result<PathBuf> {
        let path = workspace_root().join("target/debug/weir");
        if !path.exists() {
            bail!(
                "{} is missing: run `cargo build -p weir` first",
                path.display()
            );
        }
        Ok(path)
    }

    /// Copies the built Blog plugin into `dir/plugins` and starts `binary` on it, against the
    /// cluster of `kubeconfig`, watching `namespace` only (all namespaces when `None`).
    pub fn start(
        binary: &Path,
        dir: &Path,
        kubeconfig: &Path,
        namespace: Option<&str>,
        resync_secs: u64,
    ) -> Result<WeirRun> {
        Self::start_with(
            binary,
            dir,
            kubeconfig,
            (namespace, resync_secs),
            "127.0.0.1:0",
            &[],
        )
    }

    /// [`WeirRun::start`] serving `/metrics` and the rest on `listen`, with `extra` arguments
    /// of `weir run` (`--shard`, `--identity ID`, ...).
    pub fn start_with(
        binary: &Path,
        dir: &Path,
        kubeconfig: &Path,
        (namespace, resync_secs): (Option<&str>, u64),
        listen: &str,
        extra: &[&str],
    ) -> Result<WeirRun> {
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins)
            .with_context(|| format!("creating {}", plugins.display()))?;
        let blog = crate::built("blog.wasm");
        std::fs::copy(&blog, plugins.join("blog.wasm"))
            .with_context(|| format!("copying {} (run plugins/build.sh first)", blog.display()))?;
        let args = RunArgs::plugins(&plugins, kubeconfig);
        Self::launch(binary, dir, args, (namespace, resync_secs), (listen, extra))
    }

    /// `weir run --plugins-from-cluster` (components kept in `dir/components`), serving
    /// `/metrics` and the rest on `listen`, with `extra` arguments.
    pub fn start_from_cluster(
        binary: &Path,
        dir: &Path,
        kubeconfig: &Path,
        (namespace, resync_secs): (Option<&str>, u64),
        listen: &str,
        extra: &[&str],
    ) -> Result<WeirRun> {
        let components = dir.join("components");
        std::fs::create_dir_all(&components)
            .with_context(|| format!("creating {}", components.display()))?;
        let args = RunArgs::from_cluster(&components, kubeconfig);
        Self::launch(binary, dir, args, (namespace, resync_secs), (listen, extra))
    }

    fn launch(
        binary: &Path,
        dir: &Path,
        source: RunArgs,
        (namespace, resync_secs): (Option<&str>, u64),
        (listen, extra): (&str, &[&str]),
    ) -> Result<WeirRun> {
        let args = RunArgs {
            namespace: namespace.map(str::to_owned),
            resync_secs: Some(resync_secs),
            listen: listen.to_owned(),
            extra: extra.iter().map(Into::into).collect(),
            ..source
        };
        Self::spawn(binary, dir, args)
    }

    /// `binary` started with `args` (a directory or the cluster's Plugins), logging into `dir`.
    pub fn spawn(binary: &Path, dir: &Path, args: RunArgs) -> Result<WeirRun> {
        // Loaded plugins have no directory; the start below refuses them.
        let plugins = args.source.dir().map(Path::to_owned).unwrap_or_default();
        let mut run = WeirRun {
            args,
            binary: binary.to_owned(),
            plugins,
            log: dir.join("weir-run.log"),
            child: None,
            starts: 0,
        };
        run.restart()?;
        Ok(run)
    }

    /// Starts the process again (after [`WeirRun::kill`]; a running one is killed first).
    pub fn restart(&mut self) -> Result<()> {
        self.kill()?;
        let log: File = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("opening {}", self.log.display()))?;
        let child = self
            .args
            .command(&self.binary)?
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", self.binary.display()))?;
        self.child = Some(child);
        self.starts += 1;
        Ok(())
    }

    /// SIGKILL, then reaps the process: nothing in it finishes.
    pub fn kill(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().context("sending SIGKILL to weir run")?;
            child.wait().context("reaping weir run")?;
        }
        Ok(())
    }

    /// SIGTERM, then waits up to `within` for the process to stop by itself (a clean stop:
    /// Leases released, watches closed); SIGKILL if it does not, and an error either way then.
    pub async fn terminate(&mut self, within: std::time::Duration) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let term = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .context("running kill -TERM")?;
        let deadline = std::time::Instant::now() + within;
        while term.success() && std::time::Instant::now() < deadline {
            if let Some(status) = child.try_wait()? {
                if status.success() {
                    return Ok(());
                }
                bail!(
                    "weir run exited with {status} on SIGTERM; its log ends:\n{}",
                    self.log_tail(30)
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        child.kill().context("sending SIGKILL to weir run")?;
        child.wait().context("reaping weir run")?;
        bail!("weir run did not stop within {within:?} of SIGTERM ({term})")
    }

    /// Fails if the process exited on its own (a crash, a bad flag).
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(child) = &mut self.child
            && let Some(status) = child.try_wait()?
        {
            bail!(
                "weir run exited by itself ({status}); its log ends:\n{}",
                self.log_tail(30)
            );
        }
        Ok(())
    }

    /// The directory the process serves (and hot-loads) its plugins from, or keeps the
    /// components it pulled in.
    pub fn plugins(&self) -> &Path {
        &self.plugins
    }

    /// How many times the process was started.
    pub fn starts(&self) -> usize {
        self.starts
    }

    /// The running process's id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The running process's resident set size (`VmRSS`) in MiB.
    pub fn rss_mib(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        let kib: f64 = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(kib / 1024.0)
    }

    /// The last `lines` lines the processes logged.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// The body of `GET path` from a host's operations server at `addr` (HTTP/1.0: the answer ends
/// the stream), headers and all.
pub async fn ops_get(addr: std::net::SocketAddr, path: &str) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// The value of the sample `series` (`name{labels}`) in a metrics text.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

impl Drop for WeirRun {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}
