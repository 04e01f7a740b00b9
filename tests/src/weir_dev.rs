//! `weir dev` as a user runs it, as a child process: one built component, optionally an
//! operator's policy (`--policy FILE`), on the emulator `weir dev` starts itself.
//!
//! `weir dev` always brings its own emulator, so a scenario run through it stays on that
//! emulator even when `KUBECONFIG` names a real cluster (nothing of it touches that cluster).
//! The process's stderr (the host's log) goes to `DIR/weir-dev.log`, quoted in failures; its
//! stdout (the plain view's lines) to `DIR/weir-dev.out`.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::Client;
use kube::api::{Api, DynamicObject};
use weir::plugin::ResourceKind;

use crate::weir_run::WeirRun;
use crate::workspace_root;

/// How long a component may take to be served: the first start compiles a Python or
/// JavaScript component into the shared cache, beside the other tests' work.
const SERVE_BUDGET: Duration = Duration::from_secs(240);

/// `weir dev --plugin DIR/plugins/COMPONENT [--policy DIR/policy.yaml]`, killed when dropped.
pub struct WeirDev {
    child: Child,
    dir: PathBuf,
}

impl WeirDev {
    /// Copies `target/plugins/COMPONENT` into `dir/plugins` and serves it with `weir dev`,
    /// under `policy` (YAML, written to `dir/policy.yaml`) or the default policy.
    pub fn start(dir: &Path, component: &str, policy: Option<&str>) -> Result<WeirDev> {
        Self::start_with(dir, component, policy, &[])
    }

    /// [`WeirDev::start`] with `extra` arguments of `weir dev` (`--clusters 2`).
    pub fn start_with(
        dir: &Path,
        component: &str,
        policy: Option<&str>,
        extra: &[&str],
    ) -> Result<WeirDev> {
        let plugins = dir.join("plugins");
        std::fs::create_dir_all(&plugins)
            .with_context(|| format!("creating {}", plugins.display()))?;
        let built = crate::built(component);
        std::fs::copy(&built, plugins.join(component))
            .with_context(|| format!("copying {} (run plugins/build.sh all)", built.display()))?;
        let log = std::fs::File::create(dir.join("weir-dev.log"))
            .with_context(|| format!("creating {}", dir.join("weir-dev.log").display()))?;
        let mut command = Command::new(WeirRun::debug_binary()?);
        command
            .arg("--cache-dir")
            .arg(workspace_root().join("target/plugin-cache"))
            .args(["dev", "--plain", "--ready-after-ms", "100", "--plugin"])
            .arg(plugins.join(component))
            .arg("--kubeconfig")
            .arg(dir.join("kubeconfig"));
        if let Some(policy) = policy {
            let file = dir.join("policy.yaml");
            std::fs::write(&file, policy).with_context(|| format!("writing {}", file.display()))?;
            command.arg("--policy").arg(file);
        }
        command.args(extra);
        let out = std::fs::File::create(dir.join("weir-dev.out"))
            .with_context(|| format!("creating {}", dir.join("weir-dev.out").display()))?;
        let child = command
            .env("NO_COLOR", "1")
            .stdout(out)
            .stderr(log)
            .spawn()
            .context("starting weir dev")?;
        Ok(WeirDev {
            child,
            dir: dir.to_owned(),
        })
    }

    /// Fails if `weir dev` exited on its own, quoting its log.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("weir dev exited ({status}); {}", self.log());
        }
        Ok(())
    }

    /// What `weir dev` logged so far, for a failure's message.
    pub fn log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("weir-dev.log")).unwrap_or_default();
        format!("weir dev's log:\n{text}")
    }

    /// A client of `weir dev`'s emulator, once it answers.
    pub async fn client(&mut self) -> Result<Client> {
        let kubeconfig = self.dir.join("kubeconfig");
        self.until("its emulator answers", || async {
            if !kubeconfig.exists() {
                return None;
            }
            let limits = weir::client::ClientLimits::default();
            let client = weir::client::connect(Some(&kubeconfig), limits, None)
                .await
                .ok()?;
            client.apiserver_version().await.ok()?;
            Some(client)
        })
        .await
    }

    /// A client of `weir dev`'s emulator once `parent` (the plugin's kind, whose CRD `weir
    /// dev` installs when it admits the plugin) is served.
    pub async fn serving(&mut self, parent: &ResourceKind) -> Result<Client> {
        let client = self.client().await?;
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &parent.api_resource());
        self.until(&format!("{} is served", parent.kind), || async {
            api.list(&Default::default()).await.ok().map(|_| ())
        })
        .await?;
        Ok(client)
    }

    /// The first line of `weir dev`'s log that holds `text`, once there is one.
    pub async fn logged(&mut self, text: &str) -> Result<String> {
        let log = self.dir.join("weir-dev.log");
        self.until(&format!("it logs {text:?}"), || async {
            let lines = std::fs::read_to_string(&log).ok()?;
            lines.lines().find(|l| l.contains(text)).map(str::to_owned)
        })
        .await
    }

    /// The first line `weir dev` printed (its plain view, `DIR/weir-dev.out`) that holds
    /// `text`, once there is one.
    pub async fn printed(&mut self, text: &str) -> Result<String> {
        let out = self.dir.join("weir-dev.out");
        self.until(&format!("it prints {text:?}"), || async {
            let lines = std::fs::read_to_string(&out).ok()?;
            lines.lines().find(|l| l.contains(text)).map(str::to_owned)
        })
        .await
    }

    /// `f`'s first answer, asked every 200 ms while `weir dev` runs, for [`SERVE_BUDGET`].
    async fn until<T, F, Fut>(&mut self, what: &str, mut f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + SERVE_BUDGET;
        loop {
            self.check_running()?;
            if let Some(answer) = f().await {
                return Ok(answer);
            }
            if Instant::now() > deadline {
                bail!(
                    "weir dev: {what}, not within {SERVE_BUDGET:?}; {}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for WeirDev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
