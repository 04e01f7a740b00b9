//! The pod of the Deployment `weir/weir` as `podman run`: what the kubelet would do with it.
//!
//! Its container's args (with `$(VAR)` references expanded from its env), env, user, read-only
//! root and volume mounts (a ConfigMap's files, an `emptyDir`, an `image` volume), the
//! ServiceAccount's token and CA where Kubernetes mounts them, and the in-cluster address. The
//! container shares the host's network (it reaches the emulator and a registry on 127.0.0.1),
//! so where a pod has its own network the test gives it a free port: the container port in
//! `--listen` is replaced by it, so tests running at once never meet on 9090.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use super::cluster::Cluster;

/// `podman` with the storage driver tests/image.sh builds with; panics when it cannot run.
pub fn podman(args: &[&str]) -> Output {
    std::process::Command::new("podman")
        .args(["--storage-driver", "vfs"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("podman {args:?}: {e} (tests/setup-podman.sh installs it)"))
}

/// A volume as podman mounts it.
enum Mount {
    /// A host directory (a ConfigMap's files, an `emptyDir`, the ServiceAccount's secret).
    Directory {
        dir: PathBuf,
        path: String,
        read_only: bool,
    },
    /// An OCI image's root filesystem (a Kubernetes `image` volume), read-only.
    Image { reference: String, path: String },
}

/// The Deployment's pod, ready to run as a container.
pub struct Pod {
    /// The container's name (unique to this test process).
    pub name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    mounts: Vec<Mount>,
    volumes: PathBuf,
    user: String,
    read_only: bool,
    grace: i64,
    /// The port the container's `--listen` serves on (a free one on the host's network).
    pub port: u16,
}

impl Pod {
    /// The pod of the Deployment `weir/weir` as the cluster now holds it, named `weir-deploy-WAY-PID`;
    /// its volumes are made under the cluster's directory.
    pub fn of(cluster: &Cluster, way: &str) -> Pod {
        let name = format!("weir-deploy-{way}-{}", std::process::id());
        let deployment =
            cluster.kubectl_json(&["get", "-n", "weir", "deployment", "weir", "-o", "json"]);
        let spec = &deployment["spec"]["template"]["spec"];
        let container = &spec["containers"][0];
        let field = |path: &str| match path {
            "metadata.name" => name.clone(),
            "metadata.namespace" => "weir".to_string(),
            other => panic!("no value for fieldRef {other}"),
        };
        let mut env: Vec<(String, String)> = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let value = match e["value"].as_str() {
                    Some(v) => v.to_string(),
                    None => field(e["valueFrom"]["fieldRef"]["fieldPath"].as_str().unwrap()),
                };
                (e["name"].as_str().unwrap().to_string(), value)
            })
            .collect();
        let container_port = container["ports"][0]["containerPort"].as_i64().unwrap();
        let port = TcpListener::bind("0.0.0.0:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let args = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let arg = env
                    .iter()
                    .fold(a.as_str().unwrap().to_string(), |arg, (k, v)| {
                        arg.replace(&format!("$({k})"), v)
                    });
                match arg.strip_prefix("--listen=") {
                    Some(addr) => {
                        let host = addr.strip_suffix(&format!(":{container_port}"));
                        format!(
                            "--listen={}:{port}",
                            host.expect("--listen names the container port")
                        )
                    }
                    None => arg,
                }
            })
            .collect();
        env.push(("KUBERNETES_SERVICE_HOST".into(), "127.0.0.1".into()));
        env.push(("KUBERNETES_SERVICE_PORT".into(), cluster.port().to_string()));

        let volumes = cluster.path(&format!("volumes-{way}"));
        let mut mounts: Vec<Mount> = container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| mount(cluster, spec, m, &volumes))
            .collect();
        mounts.push(service_account(cluster, &volumes.join("serviceaccount")));
        let security = &spec["securityContext"];
        Pod {
            name,
            args,
            env,
            mounts,
            volumes,
            user: format!("{}:{}", security["runAsUser"], security["runAsGroup"]),
            read_only: container["securityContext"]["readOnlyRootFilesystem"] == true,
            grace: spec["terminationGracePeriodSeconds"].as_i64().unwrap(),
            port,
        }
    }

    /// The host directory behind the pod's volume `name`.
    pub fn volume(&self, name: &str) -> PathBuf {
        self.volumes.join(name)
    }

    /// `podman run -d` of the image as this pod (replacing a container of the same name).
    pub fn start(&self) {
        let _ = podman(&["rm", "--force", &self.name]);
        let mut args: Vec<String> = [
            "run",
            "--detach",
            "--name",
            self.name.as_str(),
            "--runtime",
            "runc",
            "--network=host",
            "--ulimit",
            "nofile=16384:16384",
            "--ulimit",
            "nproc=4096:4096",
            "--user",
            self.user.as_str(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("--stop-timeout={}", self.grace));
        if self.read_only {
            args.push("--read-only".into());
        }
        for (k, v) in &self.env {
            args.extend(["--env".into(), format!("{k}={v}")]);
        }
        for mount in &self.mounts {
            args.extend(match mount {
                Mount::Directory {
                    dir,
                    path,
                    read_only,
                } => {
                    let mode = if *read_only { ":ro" } else { "" };
                    ["--volume".into(), format!("{}:{path}{mode}", dir.display())]
                }
                // Read-only, as Kubernetes mounts an image volume.
                Mount::Image { reference, path } => [
                    "--mount".into(),
                    format!("type=image,source={reference},destination={path}"),
                ],
            });
        }
        args.push(super::image().into());
        args.extend(self.args.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = podman(&args);
        assert!(
            out.status.success(),
            "podman run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `podman stop` with the pod's grace period; the exit code (137 when it had to be killed).
    pub fn stop(&self) -> i64 {
        let grace = self.grace.to_string();
        let out = podman(&["stop", "--time", &grace, &self.name]);
        assert!(
            out.status.success(),
            "podman stop: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let code = podman(&["inspect", "--format", "{{.State.ExitCode}}", &self.name]);
        String::from_utf8_lossy(&code.stdout)
            .trim()
            .parse()
            .unwrap()
    }

    /// The container's output so far.
    pub fn logs(&self) -> String {
        let out = podman(&["logs", &self.name]);
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = podman(&["rm", "--force", &self.name]);
    }
}

/// What the kubelet mounts for the container's volume mount `m`: an image, or a directory made
/// under `volumes` (a ConfigMap's files, an empty `emptyDir` anyone may write).
fn mount(cluster: &Cluster, spec: &Value, m: &Value, volumes: &Path) -> Mount {
    let name = m["name"].as_str().unwrap();
    let path = m["mountPath"].as_str().unwrap().to_string();
    let volume = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no volume {name} in the pod"));
    if let Some(reference) = volume["image"]["reference"].as_str() {
        return Mount::Image {
            reference: reference.to_string(),
            path,
        };
    }
    let dir = volumes.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(configmap) = volume["configMap"]["name"].as_str() {
        configmap_files(cluster, configmap, &dir);
    } else if volume.get("emptyDir").is_some() {
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
    } else {
        panic!("volume {name}: a kind the test does not mount: {volume}");
    }
    Mount::Directory {
        dir,
        path,
        read_only: m["readOnly"] == true,
    }
}

/// What the kubelet mounts for the ServiceAccount `weir/weir`: a token (TokenRequest, through
/// kubectl), the cluster's CA and the namespace, in `dir`.
fn service_account(cluster: &Cluster, dir: &Path) -> Mount {
    std::fs::create_dir_all(dir).unwrap();
    let token = cluster.kubectl(&["create", "token", "weir", "-n", "weir"]);
    std::fs::write(dir.join("token"), token.trim()).unwrap();
    std::fs::write(dir.join("ca.crt"), cluster.emulator.ca_pem().unwrap()).unwrap();
    std::fs::write(dir.join("namespace"), "weir").unwrap();
    Mount::Directory {
        dir: dir.to_path_buf(),
        path: "/var/run/secrets/kubernetes.io/serviceaccount".into(),
        read_only: true,
    }
}

/// The files of the ConfigMap `weir/NAME` as its volume shows them (none when it is missing:
/// the Deployment marks it optional).
fn configmap_files(cluster: &Cluster, name: &str, dir: &Path) {
    use base64::Engine as _;
    let Some(stored) =
        cluster.kubectl_json_if_found(&["get", "-n", "weir", "configmap", name, "-o", "json"])
    else {
        return;
    };
    for (file, data) in stored["binaryData"].as_object().into_iter().flatten() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap())
            .unwrap();
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    for (file, text) in stored["data"].as_object().into_iter().flatten() {
        std::fs::write(dir.join(file), text.as_str().unwrap()).unwrap();
    }
}
