//! The host deployed for real: `deploy/` applied to a secure emulator (TLS, tokens, RBAC), the
//! host image (tests/image.sh: deploy/Dockerfile's `prebuilt` stage around this build's binary)
//! run with podman as the Deployment's pod runs it, and the ClusterRole `weir rbac` prints
//! proven least privilege both ways: the scenario passes with it, and fails with a 403 naming
//! the rule when any one rule is removed.
//!
//! Needs podman and runc (tests/setup-podman.sh, which tests/image.sh runs) and the Blog
//! component (plugins/build.sh). The container shares the host's network (it reaches the
//! emulator on 127.0.0.1) and gets explicit rlimits (a sandbox cannot raise them).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use kube::api::ApiResource;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use weir_emulator::{Emulator, EmulatorConfig, RequestRecord, WorkloadSimulation};

use crate::{built, workspace};

const IMAGE: &str = "localhost/weir:test";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:weir:weir";
/// How long a scenario may take to show what it waits for (the debug binary, two cores).
const PATIENCE: Duration = Duration::from_secs(90);

fn podman(args: &[&str]) -> Output {
    std::process::Command::new("podman")
        .args(["--storage-driver", "vfs"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("podman {args:?}: {e} (tests/setup-podman.sh installs it)"))
}

fn run(program: &str, args: &[&str], kubeconfig: &Path) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(workspace())
        .env("KUBECONFIG", kubeconfig)
        .output()
        .unwrap_or_else(|e| panic!("{program} {args:?}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The pod of the Deployment `weir/weir` as podman arguments: its container's args (with
/// `$(VAR)` references expanded from its env), env, volume mounts, user and read-only root,
/// the ServiceAccount's token and CA where Kubernetes mounts them, and the in-cluster address.
struct Pod {
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    mounts: Vec<(PathBuf, String, bool)>,
    user: String,
    read_only: bool,
    grace: i64,
    port: i64,
}

impl Pod {
    fn of(deployment: &Value, name: &str, volumes: &Path, emulator_port: u16) -> Pod {
        let spec = &deployment["spec"]["template"]["spec"];
        let container = &spec["containers"][0];
        let field = |path: &str| match path {
            "metadata.name" => name.to_string(),
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
        let args = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                env.iter()
                    .fold(a.as_str().unwrap().to_string(), |arg, (k, v)| {
                        arg.replace(&format!("$({k})"), v)
                    })
            })
            .collect();
        env.push(("KUBERNETES_SERVICE_HOST".into(), "127.0.0.1".into()));
        env.push(("KUBERNETES_SERVICE_PORT".into(), emulator_port.to_string()));
        let mut mounts: Vec<(PathBuf, String, bool)> = container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let volume = m["name"].as_str().unwrap();
                (
                    volumes.join(volume),
                    m["mountPath"].as_str().unwrap().to_string(),
                    m["readOnly"] == true,
                )
            })
            .collect();
        mounts.push((
            volumes.join("serviceaccount"),
            "/var/run/secrets/kubernetes.io/serviceaccount".into(),
            true,
        ));
        let security = &spec["securityContext"];
        Pod {
            name: name.to_string(),
            args,
            env,
            mounts,
            user: format!("{}:{}", security["runAsUser"], security["runAsGroup"]),
            read_only: container["securityContext"]["readOnlyRootFilesystem"] == true,
            grace: spec["terminationGracePeriodSeconds"].as_i64().unwrap(),
            port: container["ports"][0]["containerPort"].as_i64().unwrap(),
        }
    }

    /// `podman run -d` of the image as this pod.
    fn start(&self) {
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
        for (dir, path, ro) in &self.mounts {
            let mode = if *ro { ":ro" } else { "" };
            args.extend(["--volume".into(), format!("{}:{path}{mode}", dir.display())]);
        }
        args.push(IMAGE.into());
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
    fn stop(&self) -> i64 {
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

    fn logs(&self) -> String {
        let out = podman(&["logs", &self.name]);
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

/// Polls `check` every 250 ms until it answers, or panics after [`PATIENCE`] with `what` and the
/// host's log.
async fn eventually<T>(what: &str, pod: &Pod, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(t) = check().await {
            return t;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {PATIENCE:?}\n--- the host's log ---\n{}",
            pod.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn blogs(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "weir.dev".into(),
        version: "v1alpha1".into(),
        api_version: "weir.dev/v1alpha1".into(),
        kind: "Blog".into(),
        plural: "blogs".into(),
    };
    Api::namespaced_with(client.clone(), "default", &resource)
}

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
async fn ready(port: i64) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut conn) = tokio::net::TcpStream::connect(("127.0.0.1", port as u16)).await else {
        return false;
    };
    let mut answer = String::new();
    conn.write_all(b"GET /readyz HTTP/1.0\r\n\r\n")
        .await
        .is_ok()
        && conn.read_to_string(&mut answer).await.is_ok()
        && (answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"))
}

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

/// Whether the denial names `rule`: one of its resources in one of its groups.
fn names_rule(denied: &str, rule: &Value) -> bool {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(String::from))
            .collect()
    };
    strings(&rule["apiGroups"]).iter().any(|group| {
        strings(&rule["resources"]).iter().any(|resource| {
            denied.contains(&format!("resource {resource:?} in API group {group:?}"))
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_image_runs_in_cluster_with_least_privilege_and_every_rule_is_needed() {
    let image = std::process::Command::new(workspace().join("tests/image.sh"))
        .args([env!("CARGO_BIN_EXE_weir"), IMAGE])
        .output()
        .unwrap();
    assert!(
        image.status.success(),
        "tests/image.sh: {}",
        String::from_utf8_lossy(&image.stderr)
    );
    println!("{}", String::from_utf8_lossy(&image.stdout).trim());

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
    let kc = kubeconfig.as_path();
    let client = emulator.client();

    // The cluster as a user sets it up: the manifests, the plugin as the documented ConfigMap.
    run("kubectl", &["apply", "--server-side", "-k", "deploy/"], kc);
    let blog_wasm = built("blog.wasm");
    let configmap = std::process::Command::new(workspace().join("deploy/plugins/configmap.sh"))
        .arg(&blog_wasm)
        .output()
        .unwrap();
    assert!(configmap.status.success());
    let manifest = dir.path().join("plugins.yaml");
    std::fs::write(&manifest, &configmap.stdout).unwrap();
    run(
        "kubectl",
        &["apply", "--server-side", "-f", manifest.to_str().unwrap()],
        kc,
    );

    // What the kubelet would mount: the ConfigMap's files, an emptyDir, the ServiceAccount's
    // token (TokenRequest, through kubectl) with the CA and namespace.
    let volumes = dir.path().join("volumes");
    for v in ["plugins", "cache", "serviceaccount"] {
        std::fs::create_dir_all(volumes.join(v)).unwrap();
    }
    let stored: Value = serde_json::from_str(&run(
        "kubectl",
        &[
            "get",
            "-n",
            "weir",
            "configmap",
            "weir-plugins",
            "-o",
            "json",
        ],
        kc,
    ))
    .unwrap();
    for (file, data) in stored["binaryData"].as_object().unwrap() {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap())
            .unwrap();
        std::fs::write(volumes.join("plugins").join(file), bytes).unwrap();
    }
    let cache = volumes.join("cache");
    std::fs::set_permissions(&cache, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let token = run("kubectl", &["create", "token", "weir", "-n", "weir"], kc);
    let sa = volumes.join("serviceaccount");
    std::fs::write(sa.join("token"), token.trim()).unwrap();
    std::fs::write(sa.join("ca.crt"), emulator.ca_pem().unwrap()).unwrap();
    std::fs::write(sa.join("namespace"), "weir").unwrap();

    let deployment: Value = serde_json::from_str(&run(
        "kubectl",
        &["get", "-n", "weir", "deployment", "weir", "-o", "json"],
        kc,
    ))
    .unwrap();
    let port = emulator.url().rsplit(':').next().unwrap().parse().unwrap();
    let pod = Pod::of(&deployment, "weir-deploy-test", &volumes, port);

    // The scenario: Blogs converge, no request is refused, /readyz answers, a stop is clean and
    // releases the Lease.
    run("kubectl", &["apply", "-f", "deploy/examples/"], kc);
    emulator.clear_requests();
    pod.start();
    let api = blogs(&client);
    for name in ["hello", "notes"] {
        eventually(&format!("Blog {name} converges"), &pod, async || {
            api.get(name).await.ok().filter(is_converged)
        })
        .await;
    }
    eventually(
        "/readyz answers 200 on the container's port",
        &pod,
        async || ready(pod.port).await.then_some(()),
    )
    .await;
    let requests = emulator.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.user.as_deref() == Some(SERVICE_ACCOUNT))
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
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "weir");
    let lease = leases.get("weir-leader").await.unwrap();
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity),
        None,
        "the Lease was released"
    );

    // Least privilege: without any one rule of the ClusterRole `weir rbac` prints, a new Blog
    // meets a 403 naming that rule.
    let printed = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["rbac", "--plugins"])
        .arg(volumes.join("plugins"))
        .env("WEIR_CACHE_DIR", workspace().join("target/plugin-cache"))
        .output()
        .unwrap();
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let role_file = dir.path().join("cluster-role.yaml");
    std::fs::write(&role_file, &printed.stdout).unwrap();
    let role: Value = serde_json::from_str(&run(
        "kubectl",
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            role_file.to_str().unwrap(),
            "-o",
            "json",
        ],
        kc,
    ))
    .unwrap();
    let rules = role["rules"].as_array().unwrap().clone();
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client.clone());
    let set_rules = async |rules: &[Value]| {
        let patch = json!({"rules": rules});
        roles
            .patch("weir", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    };
    let mut needed = 0;
    for (i, rule) in rules.iter().enumerate() {
        let mut fewer = rules.clone();
        fewer.remove(i);
        set_rules(&fewer).await;
        emulator.clear_requests();
        let blog = format!("probe-{i}");
        let manifest = json!({"apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
            "metadata": {"name": blog, "namespace": "default"}, "spec": {"title": blog, "replicas": 1}});
        api.create(
            &Default::default(),
            &serde_json::from_value(manifest).unwrap(),
        )
        .await
        .unwrap();
        pod.start();
        let refused = eventually(
            &format!("a 403 naming rule {i} ({rule})"),
            &pod,
            async || {
                emulator.requests().into_iter().find_map(|r| {
                    let denied = r.denied.filter(|_| r.status == 403)?;
                    names_rule(&denied, rule).then_some(denied)
                })
            },
        )
        .await;
        println!("without rule {i}: {refused}");
        needed += 1;
        pod.stop();
        set_rules(&rules).await;
    }
    println!("{needed} of {} rules needed", rules.len());
    assert_eq!(needed, rules.len());

    // A plugin the policy refuses gets no rule: the Blog under a policy without Deployments.
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "children:\n  - {group: '', kind: ConfigMap}\n  - {group: '', kind: Service}\n",
    )
    .unwrap();
    let skipped = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["rbac", "--skip-refused", "--plugins"])
        .arg(volumes.join("plugins"))
        .arg("--policy")
        .arg(&policy)
        .env("WEIR_CACHE_DIR", workspace().join("target/plugin-cache"))
        .output()
        .unwrap();
    let skipped = String::from_utf8_lossy(&skipped.stdout);
    assert!(skipped.contains("refused"), "{skipped}");
    let granted: Vec<&str> = skipped
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    for kind in ["blogs", "deployments", "configmaps", "services"] {
        assert!(
            !granted.iter().any(|l| l.contains(kind)),
            "{kind} granted to a refused plugin:\n{skipped}"
        );
    }
    let _ = podman(&["rm", "--force", &pod.name]);
    emulator.shutdown().await;
}
