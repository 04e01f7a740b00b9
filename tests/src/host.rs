//! One way to start a host in a test or a benchmark. [`RunArgs`] says where the host's plugins
//! come from and which flags of `weir run` it runs with; the same value spawns the shipped binary
//! ([`crate::weir_run::WeirRun::spawn`], or [`RunArgs::command`]) or starts the host in this
//! process ([`RunArgs::in_process`]). In this process the flags go through `weir run`'s own
//! parser and configuration ([`weir::run::HostArgs::manager_config`]) and the plugin source is
//! made as `weir run` makes it ([`weir::run::Origin::source`]), so both ways run the host the
//! flags describe.
//!
//! What has no flag is in-process only: plugins already loaded ([`RunSource::Loaded`]), the
//! client and engine a scenario hands over, the scenarios' short delays (work-queue backoff, the
//! directory's settle time, the cluster source's retry: [`fast_timings`]), and what a scenario
//! sets with [`InProcess::config`]. A spawned `weir run` keeps the binary's defaults for those.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Parser;
use kube::Client;
use weir::hotload::Timing;
use weir::manager::{Manager, ManagerConfig, PluginSource};
use weir::plugin::{Engine, Plugin};
use weir::run::{HostArgs, Origin};
use weir::runtime::QueueConfig;

use crate::{TestEnv, workspace_root};

/// The command line of one host: every test and benchmark that starts a host, as the shipped
/// binary or in this process, describes it here, so they run the host the same way.
#[derive(Clone)]
pub struct RunArgs {
    /// `--plugins DIR`, `--plugins-from-cluster --component-cache DIR`, or plugins already loaded.
    pub source: RunSource,
    /// `--kubeconfig` of a spawned process (one in this process uses the client it is given).
    pub kubeconfig: Option<PathBuf>,
    /// `--cache-dir`: the workspace's compile cache unless a run needs its own.
    pub cache_dir: PathBuf,
    /// `--log`: `warn` unless a run reads the host's lines.
    pub log: String,
    /// `--namespace`; all namespaces when `None`.
    pub namespace: Option<String>,
    /// `--resync-secs`; the binary's default when `None`.
    pub resync_secs: Option<u64>,
    /// `--workers`; the binary's default when `None`.
    pub workers: Option<usize>,
    /// `--listen` of the operations server.
    pub listen: String,
    /// Further flags of how the host runs (`--shard`, `--identity ID`, `--leader-elect`, ...:
    /// [`weir::run::HostArgs`]'s).
    pub extra: Vec<OsString>,
}

/// Where a host takes its plugins from.
#[derive(Clone)]
pub enum RunSource {
    /// The components of a directory (`--plugins DIR`).
    Plugins(PathBuf),
    /// The cluster's `Plugin` objects, components kept in a directory.
    Cluster(PathBuf),
    /// Plugins already loaded, served as they are (in this process only: a process loads its own).
    Loaded(Vec<Plugin>),
}

impl RunSource {
    /// The directory of plugins or of pulled components; `None` for loaded plugins.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            RunSource::Plugins(dir) | RunSource::Cluster(dir) => Some(dir),
            RunSource::Loaded(_) => None,
        }
    }
}

impl RunArgs {
    /// `weir run --plugins DIR` against the cluster of `kubeconfig`, with the defaults above.
    pub fn plugins(dir: &Path, kubeconfig: &Path) -> Self {
        Self {
            kubeconfig: Some(kubeconfig.to_owned()),
            ..Self::new(RunSource::Plugins(dir.to_owned()))
        }
    }

    /// `weir run --plugins-from-cluster`, components kept in `components`.
    pub fn from_cluster(components: &Path, kubeconfig: &Path) -> Self {
        Self {
            kubeconfig: Some(kubeconfig.to_owned()),
            ..Self::new(RunSource::Cluster(components.to_owned()))
        }
    }

    /// A host serving `plugins` as they are loaded.
    pub fn loaded(plugins: &[Plugin]) -> Self {
        Self::new(RunSource::Loaded(plugins.to_vec()))
    }

    /// A host with `source` and the defaults above (no kubeconfig: in this process, or set one).
    pub fn new(source: RunSource) -> Self {
        Self {
            source,
            kubeconfig: None,
            cache_dir: workspace_root().join("target/plugin-cache"),
            log: "warn".into(),
            namespace: None,
            resync_secs: None,
            workers: None,
            listen: "127.0.0.1:0".into(),
            extra: Vec::new(),
        }
    }

    /// These arguments watching `namespace` only.
    pub fn namespace(self, namespace: &str) -> Self {
        Self {
            namespace: Some(namespace.to_owned()),
            ..self
        }
    }

    /// These arguments with `flags` of how the host runs added.
    pub fn flags<S: Into<OsString>>(mut self, flags: impl IntoIterator<Item = S>) -> Self {
        self.extra.extend(flags.into_iter().map(Into::into));
        self
    }

    /// These arguments competing for the leader Lease as `id`, as the scenarios run it: a 2 s
    /// Lease (renewed for 1 s of grace) in `lease_namespace`.
    pub fn elected(self, id: &str, lease_namespace: &str) -> Self {
        self.flags([
            "--leader-elect",
            "--identity",
            id,
            "--lease-namespace",
            lease_namespace,
            "--leader-elect-lease-duration",
            "2",
        ])
    }

    /// The flags of how the host runs ([`weir::run::HostArgs`]): the part of the command line
    /// that both ways of starting a host read.
    pub fn host_flags(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--listen".into(), (&self.listen).into()];
        let flags = [
            ("--namespace", self.namespace.clone()),
            ("--resync-secs", self.resync_secs.map(|s| s.to_string())),
            ("--workers", self.workers.map(|w| w.to_string())),
        ];
        for (flag, value) in flags {
            if let Some(value) = value {
                args.extend([flag.into(), value.into()]);
            }
        }
        args.extend(self.extra.iter().cloned());
        args
    }

    /// The arguments of the binary, after its name.
    pub fn args(&self) -> Result<Vec<OsString>> {
        let mut args: Vec<OsString> = vec![
            "--log".into(),
            (&self.log).into(),
            "--cache-dir".into(),
            (&self.cache_dir).into(),
            "run".into(),
        ];
        match &self.source {
            RunSource::Plugins(dir) => args.extend(["--plugins".into(), dir.into()]),
            RunSource::Cluster(dir) => args.extend([
                "--plugins-from-cluster".into(),
                "--component-cache".into(),
                dir.into(),
            ]),
            RunSource::Loaded(_) => {
                bail!("a process cannot be handed loaded plugins: give it a directory")
            }
        }
        let Some(kubeconfig) = &self.kubeconfig else {
            bail!("a spawned weir run needs a kubeconfig");
        };
        args.extend(["--kubeconfig".into(), kubeconfig.into()]);
        args.extend(self.host_flags());
        Ok(args)
    }

    /// `binary` with these arguments, and no colours in its log.
    pub fn command(&self, binary: &Path) -> Result<Command> {
        let mut command = Command::new(binary);
        command.args(self.args()?).env("NO_COLOR", "1");
        Ok(command)
    }

    /// The host these arguments describe, to start in this process against `env`'s API server
    /// (its client, the shared engine, the scenarios' short delays).
    pub fn in_process(self, env: &TestEnv) -> InProcess {
        InProcess {
            args: self,
            client: env.client.clone(),
            engine: None,
            configure: Box::new(|_| {}),
        }
    }
}

/// A host to start in this process: [`RunArgs`] and what only a process of the tests can be
/// handed.
pub struct InProcess {
    args: RunArgs,
    client: Client,
    engine: Option<Engine>,
    configure: Box<dyn FnOnce(&mut ManagerConfig) + Send>,
}

/// `weir run`'s host flags alone, parsed as the binary parses them.
#[derive(Parser)]
#[command(name = "weir run")]
struct HostCommand {
    #[command(flatten)]
    host: HostArgs,
}

impl InProcess {
    /// The host's requests go through `client` (e.g. [`TestEnv::client_as`]'s, whose requests
    /// the request log attributes).
    pub fn client(self, client: Client) -> Self {
        Self { client, ..self }
    }

    /// Components are loaded by `engine` instead of the tests' shared one.
    pub fn engine(self, engine: Engine) -> Self {
        Self {
            engine: Some(engine),
            ..self
        }
    }

    /// `configure` changes what no flag of `weir run` sets (after the flags and the short delays).
    pub fn config(self, configure: impl FnOnce(&mut ManagerConfig) + Send + 'static) -> Self {
        Self {
            configure: Box::new(configure),
            ..self
        }
    }

    /// Starts the host.
    pub async fn start(self) -> Result<Manager> {
        let flags = self.args.host_flags();
        let parsed = HostCommand::try_parse_from(
            std::iter::once(OsString::from("weir run")).chain(flags.clone()),
        )
        .with_context(|| format!("parsing the host flags {flags:?}"))?;
        let mut config = parsed.host.manager_config()?;
        fast_timings(&mut config);
        (self.configure)(&mut config);
        let engine = match self.engine {
            Some(engine) => engine,
            None => crate::engine()?.clone(),
        };
        let source = match &self.args.source {
            RunSource::Loaded(plugins) => PluginSource::Fixed(plugins.clone()),
            RunSource::Plugins(dir) => Origin::Directory(dir.clone()).source(engine),
            RunSource::Cluster(dir) => Origin::Cluster(dir.clone()).source(engine),
        };
        Ok(Manager::start(self.client, fast_source(source), config).await?)
    }
}

/// The scenarios' short delays, which `weir run` has no flag for: the work queue backs off from
/// 50 ms to 2 s and throttles a hot loop for 500 ms, so scenarios finish in seconds.
pub fn fast_timings(config: &mut ManagerConfig) {
    config.controller.queue = QueueConfig {
        base_delay: Duration::from_millis(50),
        max_delay: Duration::from_secs(2),
        hot_loop_threshold: 5,
        hot_loop_delay: Duration::from_millis(500),
        // Scaled down with the other delays: the scenarios' 100 ms polls are deliberate.
        min_requeue_after: Duration::from_millis(50),
        qps: 1000.0,
        burst: 1000,
        ..QueueConfig::default()
    };
}

/// The source with the scenarios' short delays: a directory's changes settle in 100 ms, a
/// Plugin's transient refusal is retried from 200 ms to 1 s.
fn fast_source(source: PluginSource) -> PluginSource {
    match source {
        PluginSource::Directory { mut config, engine } => {
            config.timing = Timing {
                settle: Duration::from_millis(100),
                grace: Duration::from_secs(1),
            };
            config.debounce = Duration::from_millis(20);
            PluginSource::Directory { config, engine }
        }
        PluginSource::Cluster { mut config, engine } => {
            config.retry = Duration::from_millis(200);
            config.max_retry = Duration::from_secs(1);
            PluginSource::Cluster { config, engine }
        }
        fixed => fixed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `weir run`'s arguments alone, as the binary parses them after `run`.
    #[derive(Parser)]
    struct RunCommand {
        #[command(flatten)]
        run: weir::run::RunArgs,
    }

    /// The arguments after the binary's `run`.
    fn after_run(args: &RunArgs) -> Result<Vec<OsString>> {
        let all = args.args()?;
        let run = all.iter().position(|a| a == "run").context("no `run`")?;
        Ok(all[run + 1..].to_vec())
    }

    #[test]
    fn a_spawned_and_an_in_process_host_read_the_same_host_flags() -> Result<()> {
        let args = RunArgs::plugins(Path::new("/plugins"), Path::new("/kubeconfig"))
            .namespace("ns")
            .elected("a", "leases")
            .flags(["--rollout-steps", "20,60", "--workers", "2"]);
        let spawned = RunCommand::try_parse_from(
            std::iter::once(OsString::from("weir run")).chain(after_run(&args)?),
        )?;
        let here = HostCommand::try_parse_from(
            std::iter::once(OsString::from("weir run")).chain(args.host_flags()),
        )?;
        assert_eq!(
            format!("{:?}", spawned.run.host),
            format!("{:?}", here.host)
        );
        let config = here.host.manager_config()?;
        let leader = config.leader.context("--leader-elect was given")?;
        assert_eq!(
            (
                leader.identity.as_str(),
                leader.namespace.as_str(),
                leader.duration_secs,
                leader.grace_secs
            ),
            ("a", "leases", 2, 1)
        );
        assert_eq!(config.controller.namespace.as_deref(), Some("ns"));
        assert_eq!(config.controller.workers, 2);
        assert_eq!(config.rollout.steps, [20, 60]);
        Ok(())
    }

    #[test]
    fn loaded_plugins_cannot_be_spawned() {
        let err = RunArgs::loaded(&[]).args().map(|_| ()).unwrap_err();
        assert!(err.to_string().contains("give it a directory"), "{err}");
    }
}
