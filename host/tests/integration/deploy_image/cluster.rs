//! A secure emulator as the user's cluster, driven with the real kubectl, and the scenario every
//! delivery way must pass: the Blogs converge, nothing is refused, the host stops cleanly.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;
use weir_emulator::{Emulator, EmulatorConfig, RequestRecord, WorkloadSimulation};

use super::pod::Pod;
use super::{SERVICE_ACCOUNT, eventually};
use crate::workspace;

/// The emulator with TLS, tokens and RBAC on, a kubeconfig for its admin, and a directory for
/// what the test writes.
pub struct Cluster {
    /// The API server.
    pub emulator: Emulator,
    /// An admin client.
    pub client: kube::Client,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Builds the host image (once per process) and starts the cluster.
    pub async fn start() -> Cluster {
        super::image();
        let emulator = Emulator::start(EmulatorConfig {
            secure: true,
            workloads: Some(WorkloadSimulation {
                ready_after: Duration::from_millis(200),
            }),
            ..EmulatorConfig::default()
        })
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        emulator.write_kubeconfig(&kubeconfig).unwrap();
        let client = emulator.client();
        Cluster {
            emulator,
            client,
            kubeconfig,
            dir,
        }
    }

    /// The API server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.emulator
            .url()
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// `NAME` in the test's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `kubectl ARGS` from the checkout's root; its output, or a panic with its errors.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let out = self.kubectl_output(args);
        assert!(
            out.status.success(),
            "kubectl {args:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl ARGS` whose output is JSON.
    pub fn kubectl_json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.kubectl(args)).unwrap()
    }

    /// `kubectl get ...` as JSON, or `None` when the object does not exist.
    pub fn kubectl_json_if_found(&self, args: &[&str]) -> Option<Value> {
        let out = self.kubectl_output(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && stderr.contains("NotFound") {
            return None;
        }
        assert!(out.status.success(), "kubectl {args:?}\n{stderr}");
        Some(serde_json::from_slice(&out.stdout).unwrap())
    }

    /// `kubectl apply --server-side --force-conflicts -f FILE` of `manifest`, written to `name`
    /// in the test's directory.
    pub fn apply(&self, name: &str, manifest: &[u8]) {
        let file = self.path(name);
        std::fs::write(&file, manifest).unwrap();
        let file = file.to_str().unwrap();
        self.kubectl(&["apply", "--server-side", "--force-conflicts", "-f", file]);
    }

    fn kubectl_output(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new("kubectl")
            .args(args)
            .current_dir(workspace())
            .env("KUBECONFIG", &self.kubeconfig)
            .output()
            .unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"))
    }

    /// The Blogs in `default`.
    pub fn blogs(&self) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: "weir.dev".into(),
            version: "v1alpha1".into(),
            api_version: "weir.dev/v1alpha1".into(),
            kind: "Blog".into(),
            plural: "blogs".into(),
        };
        Api::namespaced_with(self.client.clone(), "default", &resource)
    }

    /// The scenario every delivery way passes: [`Cluster::converges`], then
    /// [`Cluster::stops_cleanly`].
    pub async fn serves_the_examples(&self, pod: &Pod) {
        self.converges(pod).await;
        self.stops_cleanly(pod).await;
    }

    /// With the example Blogs applied, the pod started converges them and answers `/readyz` on
    /// its port.
    pub async fn converges(&self, pod: &Pod) {
        self.kubectl(&["apply", "-f", "deploy/examples/"]);
        self.emulator.clear_requests();
        pod.start();
        let api = self.blogs();
        for name in ["hello", "notes"] {
            eventually(&format!("Blog {name} converges"), pod, async || {
                api.get(name).await.ok().filter(is_converged)
            })
            .await;
        }
        eventually(
            "/readyz answers 200 on the container's port",
            pod,
            async || ready(pod.port).await.then_some(()),
        )
        .await;
    }

    /// The pod, running, was refused nothing since it started (it called as its ServiceAccount);
    /// stopped, it ends by itself within its grace period and releases the leader Lease.
    pub async fn stops_cleanly(&self, pod: &Pod) {
        let requests = self.emulator.requests();
        assert!(
            requests
                .iter()
                .any(|r| r.user.as_deref() == Some(SERVICE_ACCOUNT)),
            "the host called as its ServiceAccount"
        );
        assert_eq!(
            denials(&requests),
            Vec::<String>::new(),
            "the host was refused nothing"
        );
        assert_eq!(
            pod.stop(),
            0,
            "the host ended by itself within its grace period"
        );
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "weir");
        let lease = leases.get("weir-leader").await.unwrap();
        assert_eq!(
            lease.spec.and_then(|s| s.holder_identity),
            None,
            "the Lease was released"
        );
    }

    /// `weir rbac --plugins DIR [EXTRA...]`: its output, or a panic with its errors.
    pub fn weir_rbac(&self, plugins: &Path, extra: &[&str]) -> String {
        let printed = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["rbac", "--plugins"])
            .arg(plugins)
            .args(extra)
            .env("WEIR_CACHE_DIR", workspace().join("target/plugin-cache"))
            .output()
            .unwrap();
        assert!(
            printed.status.success(),
            "{}",
            String::from_utf8_lossy(&printed.stderr)
        );
        String::from_utf8_lossy(&printed.stdout).into_owned()
    }

    /// Stops the API server.
    pub async fn shutdown(self) {
        self.emulator.shutdown().await;
    }
}

/// Whether the Blog's status says it converged on its current generation.
fn is_converged(blog: &DynamicObject) -> bool {
    let condition = |t: &str| {
        blog.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == t && c["status"] == "True")
    };
    blog.data["status"]["observedGeneration"].as_i64() == blog.metadata.generation
        && condition("Ready")
        && condition("Reconciled")
}

/// `GET /readyz` on the container's port (the host network's), answered 200.
async fn ready(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut conn) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let mut answer = String::new();
    conn.write_all(b"GET /readyz HTTP/1.0\r\n\r\n")
        .await
        .is_ok()
        && conn.read_to_string(&mut answer).await.is_ok()
        && (answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"))
}

/// The requests answered 401 or 403, one line each with the reason.
fn denials(requests: &[RequestRecord]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| r.status == 401 || r.status == 403)
        .map(|r| {
            format!(
                "{} {} {}: {}",
                r.status,
                r.method,
                r.path,
                r.denied.clone().unwrap_or_default()
            )
        })
        .collect()
}
