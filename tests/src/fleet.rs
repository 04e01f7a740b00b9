//! Member clusters for the multi-cluster scenarios: a [`weir_emulator::Fleet`] beside a test's
//! hub, each member with the test's namespace, their kubeconfigs in a directory of their own.
//!
//! The hub is the test's own API server ([`crate::TestEnv`]); the members are emulators only
//! (a real fleet has no loopback kubeconfigs to hand over).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;
use weir::clusters::Engaged;
use weir::manager::Manager;
use weir_emulator::{Emulator, EmulatorConfig, Fleet, WorkloadSimulation};

use crate::TestEnv;
use crate::host::RunSource;

/// The label [`Members::serve_spread_from_secrets`] selects cluster Secrets by.
pub const CLUSTER_SECRET_SELECTOR: &str = "weir.dev/cluster=member";

/// Member clusters started for one test, and the directory of their kubeconfigs (what
/// `weir run --clusters DIR` follows).
pub struct Members {
    fleet: Fleet,
    dir: tempfile::TempDir,
    /// The policies [`Members::flags_granting`] writes (not in `dir`, which holds kubeconfigs only).
    policies: tempfile::TempDir,
}

impl Members {
    /// Starts one emulated member per name (Deployments turn ready after 100 ms), creates
    /// `namespace` in each and writes their kubeconfigs, `DIR/NAME.yaml`.
    pub async fn start(names: &[&str], namespace: &str) -> Result<Members> {
        Self::start_with(names, namespace, false).await
    }

    /// As [`Members::start`], each member secure: HTTPS, bearer tokens, RBAC enforced; its
    /// kubeconfig holds the admin token until [`Members::write_token`] hands it another.
    pub async fn start_secure(names: &[&str], namespace: &str) -> Result<Members> {
        Self::start_with(names, namespace, true).await
    }

    async fn start_with(names: &[&str], namespace: &str, secure: bool) -> Result<Members> {
        let config = EmulatorConfig {
            workloads: Some(WorkloadSimulation {
                ready_after: Duration::from_millis(100),
            }),
            secure,
            ..EmulatorConfig::default()
        };
        let fleet = Fleet::start(names, &config)
            .await
            .context("starting the member clusters")?;
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
        for (name, member) in fleet.members() {
            Api::<Namespace>::all(member.client())
                .create(&PostParams::default(), &ns)
                .await
                .with_context(|| format!("creating namespace {namespace} in {name}"))?;
        }
        let dir = tempfile::tempdir()?;
        fleet.write_kubeconfigs(dir.path())?;
        Ok(Members {
            fleet,
            dir,
            policies: tempfile::tempdir()?,
        })
    }

    /// The directory of kubeconfigs, one per member.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `weir run`'s flags for this fleet: `--clusters DIR`, and a `--policy` granting `plugin`
    /// children in every member (a plugin the policy grants no cluster places none).
    pub fn flags(&self, plugin: &str) -> Result<Vec<OsString>> {
        self.flags_granting(plugin, &["*"])
    }

    /// As [`Members::flags`], the policy granting `plugin` only `clusters` (names, or `"*"`).
    pub fn flags_granting(&self, plugin: &str, clusters: &[&str]) -> Result<Vec<OsString>> {
        let quoted: Vec<String> = clusters.iter().map(|c| format!("{c:?}")).collect();
        let yaml = format!(
            "plugins:\n  {plugin}:\n    clusters: [{}]\n",
            quoted.join(", ")
        );
        let file = self
            .policies
            .path()
            .join(format!("{plugin}-{}.yaml", clusters.len()));
        std::fs::write(&file, yaml).with_context(|| format!("writing {}", file.display()))?;
        Ok(vec![
            "--clusters".into(),
            self.dir().into(),
            "--policy".into(),
            file.into(),
        ])
    }

    /// A host in this process serving the built Spread (its CRD installed in the hub first) on
    /// this fleet, the Spread granted `clusters` ([`Members::flags_granting`]), the directory
    /// of kubeconfigs rescanned every 200 ms.
    pub async fn serve_spread(&self, env: &TestEnv, clusters: &[&str]) -> Result<Manager> {
        self.serve(env, "spread", clusters).await
    }

    /// [`Members::serve_spread`] for the built plugin `name` (`target/plugins/NAME.wasm`,
    /// whose policy entry is keyed by the same name).
    pub async fn serve(&self, env: &TestEnv, name: &str, clusters: &[&str]) -> Result<Manager> {
        let flags = self.flags_granting(name, clusters)?;
        serve_with(env, name, flags).await
    }

    /// Waits until `host` has engaged exactly this fleet's members (plus `more`, by name) and
    /// each holds its first lists; the host's handle of them.
    pub async fn engaged_by(&self, host: &Manager, more: &[&str]) -> Result<Engaged> {
        let engaged = host.clusters();
        let mut names: Vec<&str> = self.fleet.names();
        names.extend(more);
        names.sort_unstable();
        crate::eventually("the members are engaged", crate::CONVERGE, || async {
            (engaged.names() == names && engaged.is_synced()).then_some(())
        })
        .await?;
        Ok(engaged)
    }

    /// Each member's Deployments in `namespace`, in the order the members were started.
    pub fn deployments(&self, namespace: &str) -> Result<Vec<Api<Deployment>>> {
        (self.fleet.names().into_iter())
            .map(|name| Ok(Api::namespaced(self.client(name)?, namespace)))
            .collect()
    }

    /// A host in this process serving the built Spread (its CRD installed in the hub first),
    /// its members the Secrets of the test's namespace labelled `weir.dev/cluster=member`
    /// (`weir run --cluster-secrets`), the Spread granted what `grant` (a `plugins:` entry's
    /// YAML body) says.
    pub async fn serve_spread_from_secrets(&self, env: &TestEnv, grant: &str) -> Result<Manager> {
        let file = self.policies.path().join("spread-secrets.yaml");
        std::fs::write(&file, format!("plugins:\n  spread: {grant}\n"))
            .with_context(|| format!("writing {}", file.display()))?;
        let flags: Vec<OsString> = vec![
            "--cluster-secrets".into(),
            CLUSTER_SECRET_SELECTOR.into(),
            "--lease-namespace".into(),
            env.namespace.clone().into(),
            "--policy".into(),
            file.into(),
        ];
        serve_with(env, "spread", flags).await
    }

    /// A cluster Secret named `name` holding `kubeconfig`, labelled `labels` beside the label
    /// [`Members::serve_spread_from_secrets`] selects.
    pub fn secret(name: &str, kubeconfig: &str, labels: &[(&str, &str)]) -> Result<Secret> {
        let mut all: std::collections::BTreeMap<String, String> = (labels.iter())
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let (key, value) = CLUSTER_SECRET_SELECTOR
            .split_once('=')
            .context("the selector is KEY=VALUE")?;
        all.insert(key.to_owned(), value.to_owned());
        Ok(serde_json::from_value(json!({
            "metadata": {"name": name, "labels": all},
            "stringData": {weir::clusters::secrets::KUBECONFIG_KEY: kubeconfig},
        }))?)
    }

    /// Member `name`'s kubeconfig, as its file holds it.
    pub fn kubeconfig_text(&self, name: &str) -> Result<String> {
        let path = self.kubeconfig(name);
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    }

    /// The kubeconfig file of member `name`.
    pub fn kubeconfig(&self, name: &str) -> PathBuf {
        Fleet::kubeconfig_path(self.dir.path(), name)
    }

    /// Rewrites member `name`'s kubeconfig with `token` as its credentials ([`write_token`]).
    pub fn write_token(&self, name: &str, token: &str) -> Result<()> {
        write_token(self.member(name)?, &self.kubeconfig(name), token)
    }

    /// Member `name`.
    pub fn member(&self, name: &str) -> Result<&Emulator> {
        self.fleet
            .member(name)
            .with_context(|| format!("no member cluster {name}"))
    }

    /// A client of member `name`.
    pub fn client(&self, name: &str) -> Result<Client> {
        Ok(self.member(name)?.client())
    }

    /// Stops every member.
    pub async fn shutdown(self) {
        self.fleet.shutdown().await;
    }
}

/// A host in this process serving the built plugin `name` (its CRD installed in the hub first)
/// with `flags` naming its members and policy, its source of members listed every 200 ms.
async fn serve_with(env: &TestEnv, name: &str, flags: Vec<OsString>) -> Result<Manager> {
    let plugin = crate::plugin(name)?;
    env.install_crd(&plugin).await?;
    env.run_args(RunSource::Loaded(vec![plugin]))
        .flags(flags)
        .in_process(env)
        .config(|c| {
            if let Some(clusters) = &mut c.clusters {
                clusters.rescan = Duration::from_millis(200);
            }
        })
        .start()
        .await
}

/// Writes `member`'s kubeconfig to `path` with `token` as its credentials, as an installer
/// does: a hidden file beside it renamed over the old one, so a reader never sees half of it.
pub fn write_token(member: &Emulator, path: &Path, token: &str) -> Result<()> {
    let mut kubeconfig = serde_json::to_value(member.kubeconfig())?;
    kubeconfig["users"][0]["user"]["token"] = json!(token);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("kubeconfig");
    let hidden = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&hidden, serde_json::to_vec(&kubeconfig)?)?;
    std::fs::rename(&hidden, path)
        .with_context(|| format!("renaming {} into place", hidden.display()))
}

/// Makes ServiceAccount `namespace/name` in the secure `member`, bound to a ClusterRole
/// (`everything`, made if missing) that may do anything, and returns a token for it: a
/// credential that dies with the account.
pub async fn account_token(member: &Emulator, namespace: &str, name: &str) -> Result<String> {
    let pp = PostParams::default();
    let everything: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "everything"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }))?;
    match Api::<ClusterRole>::all(member.client())
        .create(&pp, &everything)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e).context("creating ClusterRole everything"),
    }
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<ServiceAccount>::namespaced(member.client(), namespace)
        .create(&pp, &account)
        .await
        .with_context(|| format!("creating ServiceAccount {namespace}/{name}"))?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": format!("{namespace}-{name}")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "everything"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }))?;
    Api::<ClusterRoleBinding>::all(member.client())
        .create(&pp, &binding)
        .await
        .with_context(|| format!("binding {namespace}/{name}"))?;
    member
        .service_account_token(namespace, name)
        .with_context(|| format!("no token for {namespace}/{name}"))
}
