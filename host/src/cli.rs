//! The `weir` command line: one enum variant and one function per subcommand.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use weir::plugin::{Engine, EngineConfig, Limits};

/// Weir runs Kubernetes reconcilers that come as sandboxed WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "weir", version = weir::plugin::VERSION_LINE, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Log filter, as in `RUST_LOG` (e.g. `info`, `weir=debug`).
    #[arg(long, global = true, env = "WEIR_LOG", default_value = "warn")]
    pub log: String,
    /// Log lines as text for people or as JSON objects for a log pipeline.
    #[arg(long, global = true, env = "WEIR_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Where compiled plugins are cached (keyed by content hash and engine
    /// settings) so that loading a Python/JS plugin takes milliseconds, not seconds.
    #[arg(long, global = true, env = "WEIR_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile plugins on every load instead of using the cache.
    #[arg(long, global = true)]
    pub no_cache: bool,
}

/// How log lines are written (to stderr).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a plugin project (Rust, Python, JavaScript or C) in a new directory.
    New(weir::scaffold::NewArgs),
    /// Run a plugin component against fixture files, offline (no cluster).
    Test(TestArgs),
    /// Write a plugin's parents on a cluster, with their children, as fixtures expecting its answers.
    Record(weir::record::RecordArgs),
    /// Reconcile against a cluster, with the plugins of a directory or the cluster's `Plugin`
    /// objects (and their candidate versions, rolled out), until SIGTERM.
    Run(weir::run::RunArgs),
    /// Run everything on this machine: the API emulator, the host and a live view (no cluster).
    #[cfg(feature = "dev")]
    Dev(weir::dev::DevArgs),
    /// Not in this build (needs the `dev` cargo feature): the API emulator, the host and a live view.
    #[cfg(not(feature = "dev"))]
    #[command(disable_help_flag = true)]
    Dev(NotBuilt),
    /// Print the ClusterRole the plugins in a directory need (from their `describe()`).
    Rbac(RbacArgs),
    /// List the plugins a running host serves (from its `/plugins` endpoint).
    Plugins(PluginsArgs),
    /// Show, promote, pause, resume or abort a candidate's rollout (the leading host carries it out).
    Rollout(weir::rollout::RolloutArgs),
    /// Push a plugin component to an OCI registry (WebAssembly layout); prints its digest.
    Push(weir::cluster::PushArgs),
    /// The signatures of a component in an OCI registry (or of a file, in `FILE.sig`), and
    /// whether the keys (or the verification policy) given verify it; exits 1 when they do not.
    Verify(weir::cluster::VerifyArgs),
    /// Sign a file of a plugins directory: writes its detached signature `FILE.sig` (the format
    /// of `cosign sign-blob --key`), which `--verification-policy` checks before it loads.
    Sign(weir::trust::SignArgs),
    /// Serve only the embedded Kubernetes API emulator, for kubectl and kube-rs, until Ctrl-C.
    #[cfg(feature = "dev")]
    Emulator(EmulatorArgs),
    /// Not in this build (needs the `dev` cargo feature): the embedded Kubernetes API emulator.
    #[cfg(not(feature = "dev"))]
    #[command(disable_help_flag = true)]
    Emulator(NotBuilt),
    /// Print a shell completion script, e.g. `weir completions bash > ~/.local/share/bash-completion/completions/weir`.
    Completions(CompletionsArgs),
    /// Compile the component on standard input into the precompiled cache (`weir run` compiles
    /// in this short-lived child process, so the compiler's memory peak is not the host's).
    #[command(hide = true)]
    CompilePlugin(CompilePluginArgs),
}

impl Cli {
    /// Runs the chosen subcommand.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match &self.command {
            Command::Test(args) => test(&self, args),
            Command::Record(args) => {
                let report = args.execute(self.engine_config())?;
                println!(
                    "recorded {} parents into {} ({} expecting an error or a refusal{})",
                    report.written,
                    args.out.display(),
                    report.failing,
                    match report.deleting {
                        0 => String::new(),
                        n => format!("; {n} being deleted left out"),
                    }
                );
                Ok(ExitCode::SUCCESS)
            }
            Command::New(args) => args
                .execute()
                .map(|()| ExitCode::SUCCESS)
                .map_err(Into::into),
            Command::Completions(args) => {
                clap_complete::generate(
                    args.shell,
                    &mut Cli::command(),
                    "weir",
                    &mut std::io::stdout(),
                );
                Ok(ExitCode::SUCCESS)
            }
            Command::Run(args) => args
                .execute(EngineConfig {
                    compiler: std::env::current_exe().ok(),
                    ..self.engine_config()
                })
                .map(|()| ExitCode::SUCCESS)
                .map_err(Into::into),
            #[cfg(feature = "dev")]
            Command::Dev(args) => args
                .execute(self.engine_config())
                .map(|()| ExitCode::SUCCESS)
                .map_err(Into::into),
            Command::Push(args) => {
                println!("{}", args.execute()?);
                Ok(ExitCode::SUCCESS)
            }
            Command::Sign(args) => {
                println!("{}", args.execute()?.display());
                Ok(ExitCode::SUCCESS)
            }
            Command::Verify(args) => {
                let report = args.execute()?;
                print!("{report}");
                Ok(if report.verdict.verified() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                })
            }
            Command::Rollout(args) => {
                println!("{}", args.execute()?);
                Ok(ExitCode::SUCCESS)
            }
            Command::Plugins(args) => {
                let runtime = tokio::runtime::Runtime::new()?;
                print!(
                    "{}",
                    weir::listing::table(&runtime.block_on(weir::listing::fetch(&args.addr))?)
                );
                Ok(ExitCode::SUCCESS)
            }
            #[cfg(feature = "dev")]
            Command::Emulator(args) => emulator(args).map(|()| ExitCode::SUCCESS),
            #[cfg(not(feature = "dev"))]
            Command::Dev(_) | Command::Emulator(_) => {
                eprintln!("{NOT_BUILT}");
                Ok(ExitCode::FAILURE)
            }
            Command::CompilePlugin(args) => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
                    .context("reading the component from standard input")?;
                let engine = Engine::new(EngineConfig {
                    pooling: !args.no_pooling,
                    baseline_compiler: args.baseline_compiler,
                    ..self.engine_config()
                })?;
                engine
                    .precompile(&args.sha256, &bytes)
                    .with_context(|| format!("compiling component {}", args.sha256))?;
                Ok(ExitCode::SUCCESS)
            }
            Command::Rbac(args) => {
                let engine = Engine::new(self.engine_config())?;
                let labels: weir::clusters::Labels = args.cluster_label.iter().cloned().collect();
                let options = weir::rbac::RbacOptions {
                    plugins: &args.plugins,
                    name: &args.name,
                    policy: args.policy.as_deref(),
                    skip_refused: args.skip_refused,
                    cluster: args.cluster.as_deref(),
                    cluster_labels: &labels,
                };
                weir::rbac::print(&engine, &options)?;
                Ok(ExitCode::SUCCESS)
            }
        }
    }

    /// The engine settings every subcommand shares.
    pub fn engine_config(&self) -> EngineConfig {
        let cache_dir = if self.no_cache {
            None
        } else {
            self.cache_dir.clone().or_else(default_cache_dir)
        };
        EngineConfig {
            cache_dir,
            ..EngineConfig::default()
        }
    }
}

/// `$XDG_CACHE_HOME/weir` or `~/.cache/weir`.
fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("weir"))
}

/// Arguments of `weir compile-plugin` (the host's own child process).
#[derive(Debug, Args)]
pub struct CompilePluginArgs {
    /// The component's sha256 (hex), its key in the cache.
    #[arg(long)]
    pub sha256: String,
    /// Compile for an engine with the baseline compiler.
    #[arg(long)]
    pub baseline_compiler: bool,
    /// Compile for an engine without the pooling allocator.
    #[arg(long)]
    pub no_pooling: bool,
}

/// Arguments of `weir completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `weir plugins`.
#[derive(Debug, Args)]
pub struct PluginsArgs {
    /// The host's operations address (`--listen` of `weir run`), `host:port`.
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub addr: String,
}

/// Arguments of `weir rbac`.
#[derive(Debug, Args)]
pub struct RbacArgs {
    /// Directory of plugin components (`*.wasm`).
    #[arg(long)]
    pub plugins: PathBuf,
    /// Name of the ClusterRole.
    #[arg(long, default_value = "weir")]
    pub name: String,
    /// Admission policy (YAML): allowed parents, child kinds and Secret types; default: the safe one.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Print the role for the admitted plugins instead of failing when some are refused.
    #[arg(long)]
    pub skip_refused: bool,
    /// The role the host needs in member cluster NAME (`weir run --clusters`): the child kinds
    /// of the plugins the policy grants that cluster.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// A label of that member (its cluster Secret's, `weir run --cluster-secrets`), for a
    /// policy granting clusters by label (`clusterSelector`); repeatable.
    #[arg(long, value_name = "KEY=VALUE", requires = "cluster", value_parser = label)]
    pub cluster_label: Vec<(String, String)>,
}

/// A `KEY=VALUE` label.
fn label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("{text:?} is not KEY=VALUE")),
    }
}

/// Arguments of `weir test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The plugin component (`.wasm`).
    pub plugin: PathBuf,
    /// A directory of fixture files (`*.yaml`, one case each).
    pub fixtures: PathBuf,
    /// Per-call timeout in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Guest memory limit in MiB.
    #[arg(long, default_value_t = 64)]
    pub memory_mib: usize,
}

/// Loads the plugin in the real sandbox, runs every fixture, prints the
/// report; exits 1 when any case fails.
fn test(cli: &Cli, args: &TestArgs) -> anyhow::Result<ExitCode> {
    let engine = Engine::new(cli.engine_config())?;
    let limits = Limits {
        timeout: Duration::from_millis(args.timeout_ms),
        memory: args.memory_mib << 20,
        ..Limits::default()
    };
    let plugin = engine.load_file(&args.plugin, limits)?;
    let summary = weir::offline::run_dir(&plugin, &args.fixtures)
        .with_context(|| format!("testing {}", plugin.label()))?;
    summary.write_report(&mut std::io::stdout().lock())?;
    Ok(if summary.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What `weir dev` and `weir emulator` answer in a build without the `dev` feature.
#[cfg(not(feature = "dev"))]
const NOT_BUILT: &str = "weir was built without the `dev` feature: `cargo install weir` / `cargo build -p weir` \
    (default features) includes `weir dev` and `weir emulator`";

/// Whatever follows `weir dev` or `weir emulator` in a build without the `dev`
/// feature: accepted unparsed, so that the answer is how to get them.
#[cfg(not(feature = "dev"))]
#[derive(Debug, Args)]
pub struct NotBuilt {
    /// Ignored.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub args: Vec<String>,
}

/// Arguments of `weir emulator`.
#[cfg(feature = "dev")]
#[derive(Debug, Args)]
pub struct EmulatorArgs {
    /// Where to write a kubeconfig pointing at the emulator.
    #[arg(long, default_value = ".weir/kubeconfig")]
    pub kubeconfig: PathBuf,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Delay before a new Pod is Running and Ready (a Job's Pod: Succeeded), in milliseconds
    /// (controllers and the kubelet are simulated, as KWOK does).
    #[arg(long, default_value_t = 1000)]
    pub ready_after_ms: u64,
    /// Do not simulate workloads at all (no Pods, no ReplicaSets, no workload status).
    #[arg(long)]
    pub no_workloads: bool,
    /// Inject faults into matching requests: a YAML list of rules (verbs, resource, client,
    /// probability, times, fault), as `weir_emulator::Rule` describes.
    #[arg(long, value_name = "FILE")]
    pub faults: Option<PathBuf>,
    /// Keep the stored objects across runs: load them from this JSON file at start when it
    /// exists, write them to it on exit (Ctrl-C or SIGTERM). Watch history is not kept.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Serve HTTPS with a CA generated at start, authenticate bearer tokens and authorize by RBAC,
    /// as a cluster does: the kubeconfig gets the CA and an admin token, ServiceAccounts get
    /// tokens from the TokenRequest API (`kubectl create token`).
    #[arg(long)]
    pub secure: bool,
    /// Filter list and watch by `shardSelector` (KEP-5866, kube-apiserver's alpha
    /// `ShardedListAndWatch` feature gate), and list the parameter in `/openapi/v3`.
    #[arg(long)]
    pub sharded_list_watch: bool,
}

/// Serves the emulator until Ctrl-C or SIGTERM, printing where it listens.
#[cfg(feature = "dev")]
fn emulator(args: &EmulatorArgs) -> anyhow::Result<()> {
    use weir_emulator::{Emulator, EmulatorConfig, Faults, WorkloadSimulation};

    let faults = match &args.faults {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Faults::new(
                Faults::from_yaml(&text).with_context(|| format!("reading {}", path.display()))?,
            )
        }
        None => Faults::default(),
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let workloads = (!args.no_workloads).then(|| WorkloadSimulation {
            ready_after: Duration::from_millis(args.ready_after_ms),
        });
        let config = EmulatorConfig {
            workloads,
            port: args.port,
            faults,
            state_file: args.state.clone(),
            secure: args.secure,
            sharded_list_watch: args.sharded_list_watch,
            // Nothing in this process reads the request log: keep none rather than grow it.
            request_log: 0,
            ..EmulatorConfig::default()
        };
        let emulator = Emulator::start(config)
            .await
            .context("starting the emulator")?;
        if let Some(dir) = args
            .kubeconfig
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        emulator
            .write_kubeconfig(&args.kubeconfig)
            .with_context(|| format!("writing {}", args.kubeconfig.display()))?;
        println!("Kubernetes API emulator at {}", emulator.url());
        if let Some(state) = &args.state {
            println!(
                "state in {} ({} objects; written on exit)",
                state.display(),
                emulator.object_count()
            );
        }
        println!(
            "kubectl --kubeconfig {} get namespaces",
            args.kubeconfig.display()
        );
        weir::run::shutdown_signal().await;
        emulator.shutdown().await;
        Ok(())
    })
}
