//! A real OCI registry on loopback for the tests: Debian's `docker-registry` (CNCF Distribution).
//!
//! Each [`LocalRegistry`] is its own process on a free port, storing in a temporary directory,
//! killed when dropped; a test may stop it and start it again on the same port and storage. `tests/setup.sh` installs the package when it is missing.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The registry binary of Debian's `docker-registry` package.
const BINARY: &str = "/usr/bin/docker-registry";

/// The repository prefix of the requests that mark a point in the access log.
const SETTLE: &str = "weir-e2e-settle-";

/// A registry process on `127.0.0.1:PORT`.
pub struct LocalRegistry {
    /// `None` while stopped ([`LocalRegistry::stop`]).
    child: Option<Child>,
    config: std::path::PathBuf,
    /// `127.0.0.1:PORT`, the registry part of a reference.
    pub addr: String,
    requests: Arc<AtomicUsize>,
    downloads: Arc<AtomicUsize>,
    /// The last `settle` request the access log showed.
    settled: Arc<AtomicUsize>,
    _dir: tempfile::TempDir,
}

impl LocalRegistry {
    /// Starts an open registry (no authentication).
    pub fn start() -> Result<LocalRegistry> {
        Self::start_with(None)
    }

    /// Starts a registry that asks for HTTP basic authentication as `user`/`password`.
    pub fn start_with_basic_auth(user: &str, password: &str) -> Result<LocalRegistry> {
        Self::start_with(Some((user, password)))
    }

    fn start_with(basic: Option<(&str, &str)>) -> Result<LocalRegistry> {
        if !Path::new(BINARY).exists() {
            bail!("{BINARY} is missing: run tests/setup.sh (apt-get install docker-registry)");
        }
        let dir = tempfile::tempdir()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = format!("127.0.0.1:{port}");
        let auth = match basic {
            Some((user, password)) => {
                let file = dir.path().join("htpasswd");
                std::fs::write(&file, htpasswd(user, password)?)?;
                format!(
                    "auth:\n  htpasswd:\n    realm: weir-test\n    path: {}\n",
                    file.display()
                )
            }
            None => String::new(),
        };
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n\
                 storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                 http:\n  addr: {addr}\n{auth}",
                dir.path().join("data").display()
            ),
        )?;
        let mut registry = LocalRegistry {
            child: None,
            config,
            addr,
            requests: Arc::new(AtomicUsize::new(0)),
            downloads: Arc::new(AtomicUsize::new(0)),
            settled: Arc::new(AtomicUsize::new(0)),
            _dir: dir,
        };
        registry.resume()?;
        Ok(registry)
    }

    /// Stops the registry process (a registry outage): its port refuses connections and its
    /// storage stays, for [`LocalRegistry::resume`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the registry process again on the same port and storage (a no-op while running).
    pub fn resume(&mut self) -> Result<()> {
        if self.child.is_some() {
            return Ok(());
        }
        let mut child = Command::new(BINARY)
            .arg("serve")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {BINARY}"))?;
        // Counts the access log's lines (Distribution writes them to stdout, in the combined log
        // format): one per HTTP request the registry served.
        if let Some(stdout) = child.stdout.take() {
            let (requests, downloads, settled) = (
                self.requests.clone(),
                self.downloads.clone(),
                self.settled.clone(),
            );
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if let Some(n) = line
                        .split_once(SETTLE)
                        .and_then(|(_, rest)| rest.split('/').next())
                        .and_then(|n| n.parse().ok())
                    {
                        settled.fetch_max(n, Ordering::Relaxed);
                        continue;
                    }
                    let get = line.contains("\"GET /v2/");
                    if get || line.contains("\"HEAD /v2/") {
                        requests.fetch_add(1, Ordering::Relaxed);
                    }
                    if get && line.contains("/blobs/") {
                        downloads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        self.child = Some(child);
        self.wait_until_serving()
    }

    /// GET and HEAD requests under `/v2/` the registry served so far (pulls, not pushes).
    pub fn reads(&self) -> usize {
        self.settle();
        self.requests.load(Ordering::Relaxed)
    }

    /// Blobs (components, configs) the registry sent so far: what resolving a tag never costs.
    pub fn downloads(&self) -> usize {
        self.settle();
        self.downloads.load(Ordering::Relaxed)
    }

    /// Waits until the access log shows one more request of our own, sent now: the registry
    /// logs a request after answering it, so the lines of the requests answered before are in.
    fn settle(&self) {
        let n = self.settled.load(Ordering::Relaxed) + 1;
        let request = format!(
            "GET /v2/{SETTLE}{n}/tags/list HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        if let Ok(mut stream) = std::net::TcpStream::connect(&self.addr) {
            let _ = stream.write_all(request.as_bytes());
            let _ = std::io::Read::read_to_end(&mut stream, &mut Vec::new());
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.settled.load(Ordering::Relaxed) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `127.0.0.1:PORT/REPOSITORY:TAG`.
    pub fn reference(&self, repository: &str, tag: &str) -> String {
        format!("{}/{repository}:{tag}", self.addr)
    }

    fn wait_until_serving(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(&self.addr).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        bail!("{BINARY} did not listen on {} within 10 s", self.addr)
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One bcrypt line of an htpasswd file (Distribution reads bcrypt only), by `htpasswd -B`.
fn htpasswd(user: &str, password: &str) -> Result<String> {
    let out = Command::new("htpasswd")
        .args(["-nbB", user, password])
        .output()
        .context("running htpasswd (apt-get install apache2-utils; tests/setup.sh does)")?;
    if !out.status.success() {
        bail!("htpasswd failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_owned() + "\n")
}

/// A `kubernetes.io/dockerconfigjson` document for `registry`.
pub fn docker_config(registry: &str, user: &str, password: &str) -> String {
    serde_json::json!({"auths": {registry: {"username": user, "password": password}}}).to_string()
}
