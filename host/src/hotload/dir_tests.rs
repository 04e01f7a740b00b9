use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use super::*;
use crate::plugin::{PluginInfo, ResourceKind};

/// A stand-in plugin: the file is `name version Kind` followed by `END`.
#[derive(Clone, Debug)]
struct Fake {
    info: PluginInfo,
    sha: String,
}

impl Loaded for Fake {
    fn info(&self) -> &PluginInfo {
        &self.info
    }
    fn sha256(&self) -> String {
        self.sha.clone()
    }
}

fn load(file: &Path) -> Result<Fake, String> {
    let text = fs::read_to_string(file).map_err(|e| e.to_string())?;
    let words: Vec<&str> = text.split_whitespace().collect();
    let [name, version, kind, "END"] = words[..] else {
        return Err(format!("not a plugin: {text:?}"));
    };
    let parent = ResourceKind {
        group: "weir.dev".into(),
        version: "v1alpha1".into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
        namespaced: true,
    };
    let info = PluginInfo {
        name: name.into(),
        version: version.into(),
        parent,
        children: vec![],
        related: vec![],
        finalizer: None,
        crd: None,
    };
    Ok(Fake {
        info,
        sha: hex::encode(Sha256::digest(text.as_bytes())),
    })
}

const TIMING: Timing = Timing {
    settle: Duration::from_millis(200),
    grace: Duration::from_secs(2),
};

struct Dir {
    tmp: tempfile::TempDir,
    state: DirState<Fake>,
}

impl Dir {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let state = DirState::new(tmp.path().to_path_buf(), TIMING, None);
        Self { tmp, state }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Writes a file last modified `age` ago.
    fn write(&self, name: &str, text: &str, age: Duration) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, text).unwrap();
        let file = fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
        path
    }

    /// Observes, loads what is ready and returns every event.
    fn scan_at(&mut self, now: Instant) -> Vec<PluginEvent<Fake>> {
        let obs = self.state.observe(now).unwrap();
        let mut events = obs.events;
        for (file, stamp) in obs.ready {
            let outcome = load(&file).map_err(FileRefusal::Invalid);
            let still = Stamp::of(&file).ok();
            events.extend(self.state.decide(&file, stamp, still, outcome, now));
        }
        events
    }

    fn scan(&mut self) -> Vec<PluginEvent<Fake>> {
        self.scan_at(Instant::now())
    }
}

const OLD: Duration = Duration::from_secs(60);

fn summary(events: &[PluginEvent<Fake>]) -> Vec<String> {
    let file = |f: &Path| f.file_name().unwrap().to_string_lossy().into_owned();
    events
        .iter()
        .map(|e| match e {
            PluginEvent::Added { file: f, plugin } => {
                format!("added {} {}", file(f), plugin.info.version)
            }
            PluginEvent::Replaced { file: f, old, new } => {
                format!(
                    "replaced {} {}->{}",
                    file(f),
                    old.info.version,
                    new.info.version
                )
            }
            PluginEvent::Removed { file: f, plugin } => {
                format!("removed {} {}", file(f), plugin.info.version)
            }
            PluginEvent::Refused {
                file: f,
                reason: FileRefusal::Invalid(_),
            } => format!("refused {} invalid", file(f)),
            PluginEvent::Refused {
                file: f,
                reason: FileRefusal::Conflict { kind, serving },
            } => {
                format!("refused {} {kind} served by {}", file(f), file(serving))
            }
            PluginEvent::Refused {
                file: f,
                reason: FileRefusal::Unverified { reason, .. },
            } => format!("refused {} {reason}", file(f)),
        })
        .collect()
}

#[test]
fn a_file_quiet_for_the_settle_time_loads_on_first_sight() {
    let mut dir = Dir::new();
    dir.write("blog.wasm", "blog 1 Blog END", OLD);
    assert_eq!(summary(&dir.scan()), ["added blog.wasm 1"]);
    assert!(
        dir.scan().is_empty(),
        "an unchanged file is not loaded twice"
    );
}

#[test]
fn a_fresh_file_waits_until_its_stamp_holds_for_the_settle_time() {
    let mut dir = Dir::new();
    dir.write("blog.wasm", "blog 1 Blog END", Duration::ZERO);
    let t0 = Instant::now();
    assert!(dir.scan_at(t0).is_empty());
    assert!(
        dir.state
            .next_due(t0)
            .is_some_and(|d| d > Duration::from_millis(100))
    );
    assert!(dir.scan_at(t0 + Duration::from_millis(100)).is_empty());
    assert_eq!(
        summary(&dir.scan_at(t0 + Duration::from_millis(250))),
        ["added blog.wasm 1"]
    );
}

#[test]
fn a_file_that_keeps_changing_is_never_loaded_half_written() {
    let mut dir = Dir::new();
    let t0 = Instant::now();
    dir.write("blog.wasm", "blog 1", Duration::ZERO);
    assert!(dir.scan_at(t0).is_empty());
    // The writer appends before the settle time is up: settling starts over.
    dir.write("blog.wasm", "blog 1 Blog", Duration::ZERO);
    assert!(dir.scan_at(t0 + Duration::from_millis(150)).is_empty());
    assert!(dir.scan_at(t0 + Duration::from_millis(300)).is_empty());
    dir.write("blog.wasm", "blog 1 Blog END", Duration::ZERO);
    assert!(dir.scan_at(t0 + Duration::from_millis(400)).is_empty());
    assert_eq!(
        summary(&dir.scan_at(t0 + Duration::from_millis(700))),
        ["added blog.wasm 1"]
    );
}

#[test]
fn a_young_file_that_fails_to_load_is_retried_not_refused() {
    let mut dir = Dir::new();
    let t0 = Instant::now();
    // Written 300 ms ago (settled) but still incomplete: a writer that pauses.
    dir.write("blog.wasm", "blog 1", Duration::from_millis(300));
    assert!(
        dir.scan_at(t0).is_empty(),
        "no refusal within the grace time"
    );
    assert!(dir.state.next_due(t0).is_some());
    dir.write("blog.wasm", "blog 1 Blog END", OLD);
    assert_eq!(
        summary(&dir.scan_at(t0 + Duration::from_millis(10))),
        ["added blog.wasm 1"]
    );
}

#[test]
fn an_invalid_file_is_refused_once_and_the_previous_version_keeps_serving() {
    let mut dir = Dir::new();
    dir.write("blog.wasm", "blog 1 Blog END", OLD);
    dir.scan();
    dir.write("blog.wasm", "garbage", OLD);
    assert_eq!(summary(&dir.scan()), ["refused blog.wasm invalid"]);
    assert!(dir.scan().is_empty(), "refused once, not on every scan");
    dir.write("blog.wasm", "blog 2 Blog END", OLD);
    assert_eq!(
        summary(&dir.scan()),
        ["replaced blog.wasm 1->2"],
        "version 1 served until now"
    );
}

#[test]
fn a_new_version_replaces_and_the_same_bytes_again_change_nothing() {
    let mut dir = Dir::new();
    dir.write("blog.wasm", "blog 1 Blog END", OLD);
    dir.scan();
    dir.write("blog.wasm", "blog 2 Blog END", OLD);
    assert_eq!(summary(&dir.scan()), ["replaced blog.wasm 1->2"]);
    dir.write("blog.wasm", "blog 2 Blog END", Duration::from_secs(30));
    assert!(
        dir.scan().is_empty(),
        "touching a file is not a new version"
    );
}

#[test]
fn a_second_file_for_a_served_kind_is_refused_naming_both_and_takes_over_when_the_first_goes() {
    let mut dir = Dir::new();
    dir.write("a.wasm", "blog 1 Blog END", OLD);
    dir.write("b.wasm", "other 1 Blog END", OLD);
    assert_eq!(
        summary(&dir.scan()),
        [
            "added a.wasm 1",
            "refused b.wasm Blog.weir.dev served by a.wasm"
        ]
    );
    fs::remove_file(dir.path("a.wasm")).unwrap();
    assert_eq!(summary(&dir.scan()), ["removed a.wasm 1", "added b.wasm 1"]);
}

#[test]
fn a_removed_file_stops_its_kind_and_other_kinds_keep_serving() {
    let mut dir = Dir::new();
    dir.write("blog.wasm", "blog 1 Blog END", OLD);
    dir.write("shop.wasm", "shop 1 Shop END", OLD);
    assert_eq!(
        summary(&dir.scan()),
        ["added blog.wasm 1", "added shop.wasm 1"]
    );
    fs::remove_file(dir.path("blog.wasm")).unwrap();
    assert_eq!(summary(&dir.scan()), ["removed blog.wasm 1"]);
}

#[test]
fn a_file_that_now_claims_another_kind_stops_the_old_kind_and_starts_the_new() {
    let mut dir = Dir::new();
    dir.write("x.wasm", "blog 1 Blog END", OLD);
    dir.scan();
    dir.write("x.wasm", "shop 1 Shop END", OLD);
    assert_eq!(summary(&dir.scan()), ["removed x.wasm 1", "added x.wasm 1"]);
}

#[test]
fn a_file_changed_while_it_was_being_loaded_is_not_served() {
    let mut dir = Dir::new();
    let path = dir.write("blog.wasm", "blog 1 Blog END", OLD);
    let now = Instant::now();
    let obs = dir.state.observe(now).unwrap();
    let (file, stamp) = obs.ready[0].clone();
    let outcome = load(&file).map_err(FileRefusal::Invalid);
    dir.write("blog.wasm", "blog 2 Blog END", OLD);
    let still = Stamp::of(&path).ok();
    assert!(
        dir.state
            .decide(&file, stamp, still, outcome, now)
            .is_empty()
    );
    assert_eq!(summary(&dir.scan()), ["added blog.wasm 2"]);
}

#[cfg(unix)]
#[test]
fn a_configmap_style_data_symlink_swap_is_a_new_version() {
    use std::os::unix::fs::symlink;
    let mut dir = Dir::new();
    // What the kubelet makes: blog.wasm -> ..data/blog.wasm, ..data -> ..<timestamp>.
    fs::create_dir(dir.path("..2026_01")).unwrap();
    fs::write(dir.path("..2026_01/blog.wasm"), "blog 1 Blog END").unwrap();
    symlink("..2026_01", dir.path("..data")).unwrap();
    symlink("..data/blog.wasm", dir.path("blog.wasm")).unwrap();
    let t0 = Instant::now();
    assert!(dir.scan_at(t0).is_empty(), "just written: settling");
    assert_eq!(
        summary(&dir.scan_at(t0 + TIMING.settle)),
        ["added blog.wasm 1"]
    );
    // The update: a new timestamped directory, then `..data` renamed over atomically.
    fs::create_dir(dir.path("..2026_02")).unwrap();
    fs::write(dir.path("..2026_02/blog.wasm"), "blog 2 Blog END").unwrap();
    symlink("..2026_02", dir.path("..data_tmp")).unwrap();
    fs::rename(dir.path("..data_tmp"), dir.path("..data")).unwrap();
    fs::remove_dir_all(dir.path("..2026_01")).unwrap();
    let t1 = t0 + TIMING.settle * 2;
    assert!(
        dir.scan_at(t1).is_empty(),
        "the new target is just written: settling"
    );
    assert_eq!(
        summary(&dir.scan_at(t1 + TIMING.settle)),
        ["replaced blog.wasm 1->2"]
    );
}

#[test]
fn hidden_files_and_other_extensions_are_ignored() {
    let mut dir = Dir::new();
    dir.write(".blog.wasm.tmp", "blog 1 Blog END", OLD);
    dir.write(".hidden.wasm", "blog 1 Blog END", OLD);
    dir.write("README.md", "blog 1 Blog END", OLD);
    assert!(dir.scan().is_empty());
}

#[test]
fn a_directory_limited_to_some_names_ignores_the_others() {
    let mut dir = Dir::new();
    dir.state = DirState::new(
        dir.tmp.path().to_path_buf(),
        TIMING,
        Some(["blog.wasm".into()].into()),
    );
    dir.write("blog-js.wasm", "blogjs 1 Blog END", OLD);
    dir.write("blog.wasm", "blog 1 Blog END", OLD);
    assert_eq!(
        summary(&dir.scan()),
        ["added blog.wasm 1"],
        "no conflict with a file not asked for"
    );
}

#[test]
fn a_signature_that_comes_changes_or_goes_has_its_file_judged_again() {
    let mut dir = Dir::new();
    dir.write("blog.wasm", "blog 1 Blog END", OLD);
    assert_eq!(summary(&dir.scan()), ["added blog.wasm 1"]);
    let ready = |dir: &mut Dir| -> Vec<PathBuf> {
        let obs = dir.state.observe(Instant::now()).unwrap();
        obs.ready.into_iter().map(|(file, _)| file).collect()
    };
    assert!(ready(&mut dir).is_empty());
    dir.write("blog.wasm.sig", "c2ln", OLD);
    assert_eq!(ready(&mut dir), [dir.path("blog.wasm")], "a signature came");
    assert_eq!(
        summary(&dir.scan()),
        [] as [&str; 0],
        "the same bytes: no event"
    );
    dir.write("blog.wasm.sig", "c2lnMg==", OLD);
    assert_eq!(ready(&mut dir), [dir.path("blog.wasm")], "it changed");
    dir.scan();
    fs::remove_file(dir.path("blog.wasm.sig")).unwrap();
    assert_eq!(ready(&mut dir), [dir.path("blog.wasm")], "it went");
    dir.scan();
    dir.write("shop.wasm.sig", "c2ln", OLD);
    assert!(
        ready(&mut dir).is_empty(),
        "a signature of no file is nothing"
    );
}

#[test]
fn a_file_and_its_signature_settle_together() {
    let mut dir = Dir::new();
    let t0 = Instant::now();
    dir.write("blog.wasm", "blog 1 Blog END", OLD);
    dir.write("blog.wasm.sig", "c2ln", Duration::ZERO);
    assert!(dir.scan_at(t0).is_empty(), "its signature is just written");
    assert_eq!(
        summary(&dir.scan_at(t0 + Duration::from_millis(250))),
        ["added blog.wasm 1"]
    );
}
