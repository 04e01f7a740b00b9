//! Hot-loading with the real sandbox: bad files are refused while the served version keeps
//! serving, ConfigMap-style swaps and slow copies are picked up once, complete.

#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the step that broke"
)]

use crate::{guests, workspace};
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::mpsc::UnboundedReceiver;
use weir::hotload::{
    Config, EngineLoader, FileRefusal, HotLoader, HotloadMetrics, PluginEvent, Timing,
};
use weir::plugin::{Engine, EngineConfig, Limits, Plugin};

/// A built plugin's bytes (`plugins/build.sh` makes them).
fn built(name: &str) -> Vec<u8> {
    let path = workspace().join("target/plugins").join(name);
    fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run plugins/build.sh first", path.display()))
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

struct Watched {
    dir: tempfile::TempDir,
    _loader: HotLoader,
    events: UnboundedReceiver<PluginEvent<Plugin>>,
    metrics: HotloadMetrics,
    catalog: weir::hotload::Catalog,
}

/// A hot loader on an empty directory, with short settle times.
fn watch() -> Watched {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::new(EngineConfig {
        cache_dir: Some(workspace().join("target/plugin-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let config = Config {
        timing: Timing {
            settle: Duration::from_millis(100),
            grace: Duration::from_millis(1000),
        },
        ..Config::new(dir.path())
    };
    let metrics = HotloadMetrics::default();
    let loader = EngineLoader {
        engine,
        limits: Limits::default(),
    };
    let (loader, events) = HotLoader::start(config, loader, metrics.clone()).unwrap();
    let catalog = loader.catalog();
    Watched {
        dir,
        _loader: loader,
        events,
        metrics,
        catalog,
    }
}

impl Watched {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `name` the way `kubectl cp` or an installer should: a hidden temporary, then a rename.
    fn put(&self, name: &str, bytes: &[u8]) {
        let tmp = self.path(&format!(".{name}.tmp"));
        fs::write(&tmp, bytes).unwrap();
        fs::rename(&tmp, self.path(name)).unwrap();
    }

    async fn next(&mut self) -> PluginEvent<Plugin> {
        tokio::time::timeout(Duration::from_secs(30), self.events.recv())
            .await
            .expect("an event within 30 s")
            .expect("the loader is running")
    }

    /// Asserts nothing more happens for a while.
    async fn quiet(&mut self, for_: Duration) {
        if let Ok(Some(event)) = tokio::time::timeout(for_, self.events.recv()).await {
            panic!("unexpected event {}", describe(&event));
        }
    }

    fn served_sha(&self) -> Vec<String> {
        self.catalog.rows().into_iter().map(|r| r.sha256).collect()
    }
}

fn describe(event: &PluginEvent<Plugin>) -> String {
    match event {
        PluginEvent::Added { file, plugin } => {
            format!("added {} {}", file.display(), plugin.label())
        }
        PluginEvent::Replaced { file, new, .. } => {
            format!("replaced {} {}", file.display(), new.label())
        }
        PluginEvent::Removed { file, .. } => format!("removed {}", file.display()),
        PluginEvent::Refused { file, reason } => format!("refused {} {reason:?}", file.display()),
    }
}

fn refusal(event: PluginEvent<Plugin>) -> FileRefusal {
    match event {
        PluginEvent::Refused { reason, .. } => reason,
        other => panic!("expected a refusal, got {}", describe(&other)),
    }
}

#[tokio::test]
async fn bad_files_are_refused_and_the_served_version_keeps_serving() {
    let mut w = watch();
    let (v1, v2) = (built("blog.wasm"), built("blog-v2.wasm"));
    w.put("blog.wasm", &v1);
    assert!(matches!(w.next().await, PluginEvent::Added { .. }));
    w.put("blog.wasm", &v2);
    match w.next().await {
        PluginEvent::Replaced { old, new, .. } => {
            assert_eq!(
                (old.sha256(), new.sha256()),
                (sha(&v1).as_str(), sha(&v2).as_str()),
                "v1 served until v2 came"
            );
        }
        other => panic!("expected the replacement, got {}", describe(&other)),
    }

    let mut other_major =
        guests::contract().replace("weir:reconciler@0.1.0", "weir:reconciler@1.0.0");
    other_major.push('\n');
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "corrupt",
            b"\0asm this is not a component at all".to_vec(),
            "blog.wasm",
        ),
        ("truncated", v2[..v2.len() / 2].to_vec(), "blog.wasm"),
        (
            "another world",
            guests::dummy_component(
                "package other:thing@1.0.0;\nworld other { export run: func() -> u32; }",
                "other",
            ),
            "does not implement weir:reconciler",
        ),
        (
            "another major version",
            guests::dummy_component(&other_major, "reconciler"),
            "weir:reconciler@1.0.0",
        ),
        (
            "describe traps",
            guests::dummy_component(&guests::contract(), "reconciler"),
            "describe() failed",
        ),
    ];
    for (case, bytes, expected) in &cases {
        w.put("blog.wasm", bytes);
        match refusal(w.next().await) {
            FileRefusal::Invalid(message) => {
                assert!(message.contains(expected), "{case}: {message}")
            }
            other => panic!("{case}: {other:?}"),
        }
        assert_eq!(w.served_sha(), [sha(&v2)], "{case}: v2 keeps serving");
    }
    assert_eq!(w.metrics.refusals("invalid"), cases.len() as u64);

    // Refused once each: nothing more happens while the bad file stays.
    w.quiet(Duration::from_millis(500)).await;
    // A good file again: served, and the refusals are history.
    w.put("blog.wasm", &v1);
    match w.next().await {
        PluginEvent::Replaced { old, new, .. } => assert_eq!(
            (old.sha256(), new.sha256()),
            (sha(&v2).as_str(), sha(&v1).as_str())
        ),
        other => panic!("expected v1 back, got {}", describe(&other)),
    }
}

#[tokio::test]
async fn a_second_file_for_a_served_kind_is_refused_naming_both_files() {
    let mut w = watch();
    let blog = built("blog.wasm");
    w.put("a-blog.wasm", &blog);
    assert!(matches!(w.next().await, PluginEvent::Added { .. }));
    w.put("b-blog.wasm", &built("blog-v2.wasm"));
    match refusal(w.next().await) {
        FileRefusal::Conflict { kind, serving } => {
            assert_eq!(kind.to_string(), "Blog.weir.dev");
            assert_eq!(serving, w.path("a-blog.wasm"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(w.metrics.refusals("conflict"), 1);
    assert_eq!(w.served_sha(), [sha(&blog)]);
}

#[tokio::test]
async fn a_file_written_slowly_in_chunks_is_loaded_once_complete() {
    let mut w = watch();
    let bytes = built("blog.wasm");
    let path = w.path("blog.wasm");
    let chunk = bytes.len().div_ceil(6);
    {
        use std::io::Write;
        let mut file = fs::File::create(&path).unwrap();
        for part in bytes.chunks(chunk) {
            file.write_all(part).unwrap();
            file.flush().unwrap();
            // Longer than the settle time: the loader sees a settled, incomplete file.
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    match w.next().await {
        PluginEvent::Added { plugin, .. } => assert_eq!(plugin.sha256(), sha(&bytes)),
        other => panic!("expected the complete file, got {}", describe(&other)),
    }
    w.quiet(Duration::from_millis(1500)).await;
    assert_eq!(
        w.metrics.refusals("invalid"),
        0,
        "no partial file was refused"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_configmap_volume_update_is_picked_up_and_a_removed_key_stops_serving() {
    use std::os::unix::fs::symlink;
    let mut w = watch();
    // The kubelet's layout: blog.wasm -> ..data/blog.wasm, ..data -> ..<timestamp>/.
    let (v1, v2) = (built("blog.wasm"), built("blog-v2.wasm"));
    fs::create_dir(w.path("..2026_11_30_1")).unwrap();
    fs::write(w.path("..2026_11_30_1/blog.wasm"), &v1).unwrap();
    symlink("..2026_11_30_1", w.path("..data")).unwrap();
    symlink("..data/blog.wasm", w.path("blog.wasm")).unwrap();
    assert!(matches!(w.next().await, PluginEvent::Added { .. }));

    // An update: a new timestamped directory, `..data` swapped by rename, the old one removed.
    fs::create_dir(w.path("..2026_11_30_2")).unwrap();
    fs::write(w.path("..2026_11_30_2/blog.wasm"), &v2).unwrap();
    symlink("..2026_11_30_2", w.path("..data_tmp")).unwrap();
    fs::rename(w.path("..data_tmp"), w.path("..data")).unwrap();
    fs::remove_dir_all(w.path("..2026_11_30_1")).unwrap();
    match w.next().await {
        PluginEvent::Replaced { new, .. } => assert_eq!(new.sha256(), sha(&v2)),
        other => panic!("expected the swap, got {}", describe(&other)),
    }

    // The key removed from the ConfigMap: its symlink goes.
    fs::remove_file(w.path("blog.wasm")).unwrap();
    assert!(matches!(w.next().await, PluginEvent::Removed { .. }));
    assert!(w.catalog.is_empty());
}
