//! `weir dev` as a user runs it: a process, the real kubectl, a Blog applied, children and
//! `Ready` seen, and a clean stop on SIGINT or SIGTERM.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the step that broke"
)]

use crate::workspace;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const KUBECTL: &str = "/usr/bin/kubectl";

/// A `weir dev` process with its stdout read line by line.
pub struct Dev {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    /// Its kubeconfig.
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Dev {
    /// Starts `weir dev` on a plugins directory holding `plugins` (names in target/plugins),
    /// serving only `serve` from it if given (`--plugin`).
    fn start(plugins: &[&str], serve: Option<&str>) -> Dev {
        let dir = tempfile::tempdir().unwrap();
        let plugin_dir = dir.path().join("plugins");
        std::fs::create_dir(&plugin_dir).unwrap();
        for name in plugins {
            std::fs::copy(
                workspace().join("target/plugins").join(name),
                plugin_dir.join(name),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}; run plugins/build.sh first"));
        }
        let args: Vec<std::ffi::OsString> = match serve {
            Some(name) => vec!["--plugin".into(), plugin_dir.join(name).into()],
            None => vec!["--plugins".into(), plugin_dir.into()],
        };
        Dev::spawn(dir, &args, &[])
    }

    /// Starts `weir dev ARGS` with its kubeconfig in `dir` (kept until the end).
    pub fn spawn(
        dir: tempfile::TempDir,
        args: &[std::ffi::OsString],
        envs: &[(&str, PathBuf)],
    ) -> Dev {
        let kubeconfig = dir.path().join(".weir/kubeconfig");
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        command.args(["dev", "--ready-after-ms", "100"]).args(args);
        let mut child = command
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env("WEIR_CACHE_DIR", workspace().join("target/plugin-cache"))
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Dev {
            child,
            lines,
            seen: Vec::new(),
            kubeconfig,
            _dir: dir,
        }
    }

    /// Waits for an output line containing every one of `parts`.
    pub fn expect_line(&mut self, parts: &[&str]) -> String {
        self.expect_line_within(parts, Duration::from_secs(60))
    }

    /// Waits at most `wait` for an output line containing every one of `parts`.
    pub fn expect_line_within(&mut self, parts: &[&str], wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if parts.iter().all(|p| line.contains(p)) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!(
            "no line with {parts:?}; output so far:\n{}",
            self.seen.join("\n")
        );
    }

    /// Lines printed since the last look, without waiting.
    pub fn drain(&mut self) -> Vec<String> {
        let new: Vec<String> = self.lines.try_iter().collect();
        self.seen.extend(new.iter().cloned());
        new
    }

    /// Runs kubectl on the emulator; fails the test when kubectl fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let out = Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Sends `signal` and waits for a clean exit.
    pub fn stop(mut self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "weir dev exited with {status}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "weir dev did not stop within 30 s of {signal}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // The reader thread drains what was printed before the exit.
        self.seen.extend(self.lines.try_iter());
        assert!(
            self.seen.iter().any(|l| l.contains("stopping")),
            "{}",
            self.seen.join("\n")
        );
    }
}

impl Drop for Dev {
    /// A test that panics must not leave its `weir dev` running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A plain HTTP/1.0 GET (the server closes the connection after answering); returns the body.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    body.to_owned()
}

#[test]
fn weir_dev_serves_a_blog_applied_with_kubectl_and_stops_on_sigint() {
    // blog-v2.wasm claims Blog too: `--plugin` picks the one to serve.
    let mut dev = Dev::start(&["blog.wasm", "blog-v2.wasm"], Some("blog.wasm"));
    let hint = dev.expect_line(&["kubectl --kubeconfig"]);
    assert!(hint.contains(".weir/kubeconfig"), "{hint}");
    let listing = dev.expect_line(&["listed at http://"]);
    dev.expect_line(&["plugin blog", "serves Blog.weir.dev"]);
    // The plugin's CRD is installed before its controller starts.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(&dev.kubeconfig)
        .args(["get", "crd", "blogs.weir.dev"])
        .output()
        .is_ok_and(|o| !o.status.success())
    {
        assert!(Instant::now() < deadline, "the Blog CRD was not installed");
        std::thread::sleep(Duration::from_millis(100));
    }

    let examples = workspace().join("deploy/examples/blog.yaml");
    dev.kubectl(&["apply", "-f", examples.to_str().unwrap()]);
    dev.expect_line(&[
        "Blog default/hello: Ready=True",
        "3 children",
        "ConfigMap/hello-page",
        "Deployment/hello",
        "Service/hello",
    ]);
    dev.kubectl(&[
        "wait",
        "--for=condition=Ready",
        "blog/hello",
        "--timeout=30s",
    ]);
    let replicas = dev.kubectl(&[
        "get",
        "deployment",
        "hello",
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]);
    assert_eq!(replicas, "2");

    // `/plugins` lists what is served, with the file's hash and reconcile counts.
    let addr = listing
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap();
    let plugins: serde_json::Value = serde_json::from_str(&http_get(addr, "/plugins")).unwrap();
    assert_eq!(plugins.as_array().map(Vec::len), Some(1), "{plugins}");
    let blog = &plugins[0];
    assert_eq!(
        (&blog["name"], &blog["version"], &blog["kind"]),
        (&"blog".into(), &"0.1.0".into(), &"Blog.weir.dev".into())
    );
    let bytes = std::fs::read(workspace().join("target/plugins/blog.wasm")).unwrap();
    assert_eq!(
        blog["sha256"],
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes))
    );
    assert!(
        blog["loadedAt"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{blog}"
    );
    assert!(
        blog["reconciles"]["success"]
            .as_u64()
            .is_some_and(|n| n >= 2),
        "{blog}"
    );
    let listed = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["plugins", "--addr", addr])
        .output()
        .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(
        listed
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("blog ") && l.contains("Blog.weir.dev")),
        "{listed}"
    );
    let metrics = http_get(addr, "/metrics");
    // Whole series names, as the docs spell them (the registry adds the `weir_` prefix once).
    let line = |start: &str| metrics.lines().any(|l| l.starts_with(start));
    assert!(
        line(r#"weir_plugin_changes_total{change="added"} 1"#),
        "{metrics}"
    );
    assert!(line("weir_plugins_served 1"), "{metrics}");
    assert!(
        line("# TYPE weir_plugin_refusals counter") && !line("weir_plugin_refusals_total{"),
        "the refusals are counted, and nothing was refused: {metrics}"
    );
    dev.stop("-INT");
}

#[test]
fn weir_dev_with_no_plugins_yet_stops_cleanly_on_sigterm() {
    let mut dev = Dev::start(&[], None);
    dev.expect_line(&["kubectl --kubeconfig"]);
    assert!(dev.kubectl(&["get", "namespaces"]).contains("default"));
    dev.stop("-TERM");
}

#[test]
fn weir_dev_names_its_kinds_and_tells_a_rollout_undo_put_back_from_a_blog_edit() {
    let mut dev = Dev::start(&["blog.wasm"], None);
    let hint = dev.expect_line(&["kubectl --kubeconfig"]);
    assert!(
        !hint.contains("get blogs"),
        "named before any plugin: {hint}"
    );
    // Once the plugin serves, the hint names its parent kind and its children.
    let kinds = dev.expect_line(&["kubectl --kubeconfig", " get blogs,"]);
    assert!(
        kinds.ends_with(" get blogs,configmaps,deployments,services"),
        "{kinds}"
    );
    let examples = workspace().join("deploy/examples/blog.yaml");
    dev.kubectl(&["apply", "-f", examples.to_str().unwrap()]);
    dev.expect_line(&["Blog default/hello: Ready=True"]);
    dev.kubectl(&["rollout", "status", "deployment/hello", "--timeout=60s"]);

    // The Blog asks for another image: the plugin's answer changed.
    dev.kubectl(&[
        "patch",
        "blog",
        "hello",
        "--type=merge",
        "-p",
        r#"{"spec":{"image":"nginx:1.28"}}"#,
    ]);
    let field =
        "Deployment default/hello (spec.template.spec.containers[0].image) of Blog default/hello";
    dev.expect_line(&[&format!("updated {field}")]);
    dev.kubectl(&["rollout", "status", "deployment/hello", "--timeout=60s"]);

    // `kubectl rollout undo` brings back the old template with its old annotations: put back.
    let undo = dev.kubectl(&["rollout", "undo", "deployment/hello"]);
    assert!(undo.contains("rolled back"), "{undo}");
    dev.expect_line(&[&format!("put back {field}")]);
    let image = dev.kubectl(&[
        "get",
        "deployment",
        "hello",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    assert_eq!(image, "nginx:1.28");
    dev.stop("-INT");
}
