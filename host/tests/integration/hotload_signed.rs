//! Hot-loading under a verification policy, with the real sandbox: a file whose signature
//! (`FILE.sig`) does not verify never reaches the engine under `enforce` and keeps the version
//! before it serving; a signature written after its file has the file judged again; `audit`
//! and a `trusted` directory serve what does not verify.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the step that broke"
)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::mpsc::UnboundedReceiver;
use weir::hotload::{
    Config, EngineLoader, FileRefusal, HotloadMetrics, Loader, PluginEvent, Source, Timing,
};
use weir::plugin::{Engine, EngineConfig, Limits, LoadError, Plugin};
use weir::trust::{Policy, PrivateKey, blob};

use crate::workspace;

fn built(name: &str) -> Vec<u8> {
    let path = workspace().join("target/plugins").join(name);
    fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run plugins/build.sh first", path.display()))
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn key(n: u8) -> PrivateKey {
    PrivateKey::from_bytes(&[n; 32]).unwrap()
}

/// A policy trusting `platform`'s key alone, the directory at `level`.
fn policy(platform: &PrivateKey, level: &str) -> Arc<Policy> {
    let pem: String = platform
        .public_pem()
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    let text = format!(
        "apiVersion: v1\nlevel: {{directory: {level}}}\nallOf:\n  - kind: pubKey\n    name: platform\n    key: |\n{pem}"
    );
    Arc::new(Policy::parse(&text).unwrap())
}

/// The engine's loader, noting the sha256 of every component it was handed.
#[derive(Clone)]
struct Noting {
    inner: EngineLoader,
    handed: Arc<Mutex<Vec<String>>>,
}

impl Loader for Noting {
    type Plugin = Plugin;
    type Error = LoadError;
    fn load(&self, file: &Path, bytes: &[u8]) -> Result<Plugin, LoadError> {
        self.handed.lock().unwrap().push(sha(bytes));
        self.inner.load(file, bytes)
    }
    fn load_verified(&self, file: &Path, sha256: &str) -> Result<Plugin, LoadError> {
        self.handed.lock().unwrap().push(sha256.to_owned());
        self.inner.load_verified(file, sha256)
    }
}

struct Signed {
    dir: tempfile::TempDir,
    source: Source<Plugin>,
    handed: Arc<Mutex<Vec<String>>>,
    metrics: HotloadMetrics,
}

/// The directory source on an empty directory (with a `candidates/` folder) held to `policy`.
fn watch(policy: Arc<Policy>) -> Signed {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("candidates")).unwrap();
    let engine = Engine::new(EngineConfig {
        cache_dir: Some(workspace().join("target/plugin-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let config = Config {
        timing: Timing {
            settle: Duration::from_millis(100),
            grace: Duration::from_millis(300),
        },
        verification: Some(policy),
        ..Config::new(dir.path())
    };
    let handed = Arc::new(Mutex::new(Vec::new()));
    let loader = Noting {
        inner: EngineLoader {
            engine,
            limits: Limits::default(),
        },
        handed: handed.clone(),
    };
    let metrics = HotloadMetrics::default();
    let source = Source::directory(config, loader, metrics.clone()).unwrap();
    Signed {
        dir,
        source,
        handed,
        metrics,
    }
}

impl Signed {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `name` through a hidden temporary renamed over it.
    fn put(&self, name: &str, bytes: &[u8]) {
        let tmp = self.path(&format!(".{}.tmp", name.replace('/', "_")));
        fs::write(&tmp, bytes).unwrap();
        fs::rename(&tmp, self.path(name)).unwrap();
    }

    /// Writes `name` and, when `by` is given, its signature by that key.
    fn put_signed(&self, name: &str, bytes: &[u8], by: Option<&PrivateKey>) {
        if let Some(key) = by {
            let signature = blob::sign(key, bytes);
            self.put(&format!("{name}.sig"), signature.as_bytes());
        }
        self.put(name, bytes);
    }

    async fn next(&mut self) -> PluginEvent<Plugin> {
        next(&mut self.source.events).await
    }

    fn served_sha(&self) -> Vec<String> {
        self.source
            .catalog
            .rows()
            .into_iter()
            .map(|r| r.sha256)
            .collect()
    }

    fn handed(&self) -> Vec<String> {
        self.handed.lock().unwrap().clone()
    }
}

async fn next(events: &mut UnboundedReceiver<PluginEvent<Plugin>>) -> PluginEvent<Plugin> {
    tokio::time::timeout(Duration::from_secs(30), events.recv())
        .await
        .expect("an event within 30 s")
        .expect("the loader is running")
}

fn unverified(event: PluginEvent<Plugin>) -> (&'static str, String) {
    match event {
        PluginEvent::Refused {
            reason: FileRefusal::Unverified { reason, message },
            ..
        } => (reason, message),
        PluginEvent::Refused { reason, .. } => panic!("refused otherwise: {reason}"),
        PluginEvent::Added { plugin, .. } | PluginEvent::Replaced { new: plugin, .. } => {
            panic!("served {}", plugin.label())
        }
        PluginEvent::Removed { plugin, .. } => panic!("removed {}", plugin.label()),
    }
}

#[tokio::test]
async fn under_enforce_what_does_not_verify_never_reaches_the_engine_and_what_served_keeps_serving()
{
    let (platform, stranger) = (key(1), key(2));
    let mut w = watch(policy(&platform, "enforce"));
    let (v1, v2) = (built("blog.wasm"), built("blog-v2.wasm"));

    // Unsigned: refused once its grace is over, and never compiled.
    w.put_signed("blog.wasm", &v1, None);
    let (reason, message) = unverified(w.next().await);
    assert_eq!(reason, "Unsigned");
    assert!(message.contains("blog.wasm.sig"), "{message}");
    assert_eq!(w.metrics.refusals("unsigned"), 1);
    assert!(
        w.handed().is_empty(),
        "the engine was handed {:?}",
        w.handed()
    );
    assert!(w.served_sha().is_empty());

    // Its signature written afterwards: the file is judged again, and served.
    w.put("blog.wasm.sig", blob::sign(&platform, &v1).as_bytes());
    match w.next().await {
        PluginEvent::Added { plugin, .. } => assert_eq!(plugin.sha256(), sha(&v1)),
        other => panic!("expected v1 served, got {other:?}"),
    }

    // A new version signed by a key the policy does not know: refused, v1 keeps serving.
    w.put_signed("blog.wasm", &v2, Some(&stranger));
    let (reason, message) = unverified(w.next().await);
    assert_eq!(reason, "SignatureUntrusted");
    assert!(
        message.contains("no key of the policy verifies it") && message.contains(&sha(&v2)),
        "{message}"
    );
    assert_eq!(w.metrics.refusals("untrusted"), 1);
    assert_eq!(w.served_sha(), [sha(&v1)]);

    // v1's signature beside v2 (a signature moved from another file): refused too.
    w.put("blog.wasm.sig", blob::sign(&platform, &v1).as_bytes());
    let (reason, _) = unverified(w.next().await);
    assert_eq!(reason, "SignatureUntrusted");
    assert_eq!(w.served_sha(), [sha(&v1)]);
    assert!(
        !w.handed().contains(&sha(&v2)),
        "v2 was never compiled while its signature did not verify"
    );

    // v2 signed by the platform: it replaces v1.
    w.put("blog.wasm.sig", blob::sign(&platform, &v2).as_bytes());
    match w.next().await {
        PluginEvent::Replaced { old, new, .. } => assert_eq!(
            (old.sha256(), new.sha256()),
            (sha(&v1).as_str(), sha(&v2).as_str())
        ),
        other => panic!("expected v2 to replace v1, got {other:?}"),
    }
}

#[tokio::test]
async fn a_candidate_is_held_to_the_policy_as_the_serving_file_is() {
    let platform = key(1);
    let mut w = watch(policy(&platform, "enforce"));
    let (v1, v2) = (built("blog.wasm"), built("blog-v2.wasm"));
    w.put_signed("blog.wasm", &v1, Some(&platform));
    assert!(matches!(w.next().await, PluginEvent::Added { .. }));
    let mut candidates = w.source.candidates.take().unwrap();
    w.put_signed("candidates/blog.wasm", &v2, None);
    let (reason, _) = unverified(next(&mut candidates.events).await);
    assert_eq!(reason, "Unsigned");
    assert!(!w.handed().contains(&sha(&v2)));
    w.put(
        "candidates/blog.wasm.sig",
        blob::sign(&platform, &v2).as_bytes(),
    );
    match next(&mut candidates.events).await {
        PluginEvent::Added { plugin, .. } => assert_eq!(plugin.sha256(), sha(&v2)),
        other => panic!("expected the candidate, got {other:?}"),
    }
}

#[tokio::test]
async fn under_audit_or_in_a_trusted_directory_what_does_not_verify_is_served() {
    let (platform, stranger) = (key(1), key(2));
    let blog = built("blog.wasm");
    for (level, by) in [
        ("audit", None),
        ("audit", Some(&stranger)),
        ("trusted", None),
    ] {
        let mut w = watch(policy(&platform, level));
        w.put_signed("blog.wasm", &blog, by);
        match w.next().await {
            PluginEvent::Added { plugin, .. } => assert_eq!(plugin.sha256(), sha(&blog)),
            other => panic!("{level}: expected it served, got {other:?}"),
        }
        assert_eq!(
            w.metrics.refusals("unsigned") + w.metrics.refusals("untrusted"),
            0,
            "{level}"
        );
    }
}
