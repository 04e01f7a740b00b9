//! The plugins directory as last seen: which files are settling, serving or refused.
//!
//! Events from the file watcher only say "look again"; this state, rebuilt from
//! `stat` on every scan, is the truth. That makes the same code right for the
//! two ways Kubernetes fills a volume: a ConfigMap or Secret volume swaps a
//! `..data` symlink (the target of `blog.wasm` changes inode in one step), an
//! image or emptyDir volume gets files copied in (size and mtime move until
//! the writer is done). A file is loaded only once its stamp has held still for
//! the settle time, and a load that fails while the file is still young is
//! retried rather than refused, so a half-written file is never served. A file's stamp covers
//! its detached signature (`FILE.sig`) too: both settle together, and a signature that comes,
//! changes or goes has the file judged again.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::arbiter::{Arbiter, KindKey};
use crate::plugin::PluginInfo;

/// What the hot loader needs from a loaded plugin.
pub trait Loaded: Clone + Send + Sync + 'static {
    /// What the plugin said about itself at load.
    fn info(&self) -> &PluginInfo;
    /// Hex sha256 of the component file it was loaded from.
    fn sha256(&self) -> String;
}

/// A component file and its detached signature (`FILE.sig`, `crate::trust::blob`) at one
/// moment: any write or swap of either changes it, so a signature written after its file, or
/// replaced, has the file judged again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    file: Identity,
    signature: Option<Identity>,
}

/// Identity and size of one file at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    len: u64,
    mtime: SystemTime,
    dev: u64,
    ino: u64,
}

impl Stamp {
    /// Stamps `path` and its signature, following symlinks (a ConfigMap key is a symlink into
    /// `..data`).
    pub(crate) fn of(path: &Path) -> io::Result<Self> {
        Ok(Self::with_signature(path, Identity::of(path)?))
    }

    fn with_signature(path: &Path, file: Identity) -> Self {
        let signature = Identity::of(&crate::trust::blob::signature_path(path)).ok();
        Self { file, signature }
    }

    /// How long ago the file or its signature was last written, by the wall clock.
    fn age(&self) -> Duration {
        let file = self.file.age();
        self.signature.map_or(file, |s| s.age().min(file))
    }
}

impl Identity {
    fn of(path: &Path) -> io::Result<Self> {
        Self::from_meta(&fs::metadata(path)?)
    }

    fn from_meta(meta: &fs::Metadata) -> io::Result<Self> {
        let (dev, ino) = dev_ino(meta);
        Ok(Self {
            len: meta.len(),
            mtime: meta.modified()?,
            dev,
            ino,
        })
    }

    fn age(&self) -> Duration {
        SystemTime::now()
            .duration_since(self.mtime)
            .unwrap_or(Duration::ZERO)
    }
}

#[cfg(unix)]
fn dev_ino(meta: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn dev_ino(_meta: &fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// Why a file was refused; the metric's `reason` label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileRefusal {
    /// The loader rejected it (not a component, wrong world or WIT version, `describe()` failed, ...).
    Invalid(String),
    /// Another file already serves the same parent kind.
    Conflict {
        /// The parent kind both files claim.
        kind: KindKey,
        /// The file that serves it.
        serving: PathBuf,
    },
    /// Its signature does not meet the verification policy, which the directory is held to
    /// with `enforce`; nothing of the file ran.
    Unverified {
        /// `Unsigned` (no `FILE.sig`), `SignatureUntrusted` (each signature's fault) or
        /// `SignatureUnavailable` (`FILE.sig` could not be read).
        reason: &'static str,
        /// Why, naming the file, its digest and each signature's fault.
        message: String,
    },
}

impl FileRefusal {
    /// A short, stable label for metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::Conflict { .. } => "conflict",
            Self::Unverified {
                reason: "Unsigned", ..
            } => "unsigned",
            Self::Unverified { .. } => "untrusted",
        }
    }
}

impl fmt::Display for FileRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(why) => f.write_str(why),
            Self::Conflict { kind, serving } => {
                write!(f, "kind {kind} is already served by {}", serving.display())
            }
            Self::Unverified { reason, message } => write!(f, "{reason}: {message}"),
        }
    }
}

/// A change in what the directory serves, or a file turned away.
#[derive(Clone, Debug)]
pub enum PluginEvent<P> {
    /// A file now serves a parent kind nobody served.
    Added {
        /// The component file.
        file: PathBuf,
        /// The loaded plugin.
        plugin: P,
    },
    /// A file serving a kind changed; `new` replaces `old` for that kind.
    Replaced {
        /// The component file.
        file: PathBuf,
        /// The version that served until now.
        old: P,
        /// The version that serves from now on.
        new: P,
    },
    /// A file went away (or now claims another kind): its kind is no longer served.
    Removed {
        /// The component file.
        file: PathBuf,
        /// The version that served until now.
        plugin: P,
    },
    /// A settled file could not be served; what served before keeps serving.
    Refused {
        /// The component file.
        file: PathBuf,
        /// Why.
        reason: FileRefusal,
    },
}

/// One file's history.
struct Entry<P> {
    /// The plugin this file serves.
    serving: Option<P>,
    /// The stamp last decided on (served or refused): nothing to do while it holds, unless the
    /// kind it was refused for is free again.
    decided: Option<Stamp>,
    /// A stamp not decided on yet, and when it may be loaded.
    settling: Option<(Stamp, Instant)>,
}

impl<P> Default for Entry<P> {
    fn default() -> Self {
        Self {
            serving: None,
            decided: None,
            settling: None,
        }
    }
}

/// How long files must hold still before they are loaded.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// A file whose stamp has not changed for this long is complete enough to try.
    pub settle: Duration,
    /// A file that fails to load within this long of its last write is retried, not refused.
    pub grace: Duration,
}

/// The result of looking at the directory.
pub(crate) struct Observation<P> {
    /// Files ready to load, in name order.
    pub(crate) ready: Vec<(PathBuf, Stamp)>,
    /// Kinds no longer served because their file went away.
    pub(crate) events: Vec<PluginEvent<P>>,
}

/// The directory's files and the kinds they serve.
pub(crate) struct DirState<P> {
    dir: PathBuf,
    timing: Timing,
    only: Option<BTreeSet<OsString>>,
    files: BTreeMap<PathBuf, Entry<P>>,
    arbiter: Arbiter<PathBuf>,
}

impl<P: Loaded> DirState<P> {
    pub(crate) fn new(dir: PathBuf, timing: Timing, only: Option<BTreeSet<OsString>>) -> Self {
        Self {
            dir,
            timing,
            only,
            files: BTreeMap::new(),
            arbiter: Arbiter::default(),
        }
    }

    /// Stats every `*.wasm` file and says which are ready to load.
    pub(crate) fn observe(&mut self, now: Instant) -> io::Result<Observation<P>> {
        let present = self.list()?;
        let mut events = Vec::new();
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|f| !present.contains_key(*f))
            .cloned()
            .collect();
        for file in gone {
            self.arbiter.stop_waiting(&file);
            if let Some(entry) = self.files.remove(&file)
                && let Some(plugin) = entry.serving
            {
                self.release(&KindKey::of(plugin.info()));
                events.push(PluginEvent::Removed { file, plugin });
            }
        }
        let mut ready = Vec::new();
        for (file, stamp) in present {
            let entry = self.files.entry(file.clone()).or_default();
            if entry.decided == Some(stamp) {
                entry.settling = None;
                continue;
            }
            let ready_at = match entry.settling {
                Some((seen, at)) if seen == stamp => at,
                _ => {
                    // Already quiet for the settle time (a rename, or a file present at
                    // start): no need to watch it longer.
                    let wait = self.timing.settle.saturating_sub(stamp.age());
                    now + wait
                }
            };
            entry.settling = Some((stamp, ready_at));
            if ready_at <= now {
                ready.push((file, stamp));
            }
        }
        Ok(Observation { ready, events })
    }

    /// How long until the next settling file may be loaded, if any is settling.
    pub(crate) fn next_due(&self, now: Instant) -> Option<Duration> {
        self.files
            .values()
            .filter_map(|e| e.settling.map(|(_, at)| at.saturating_duration_since(now)))
            .min()
    }

    /// Records the outcome of loading `file` at `stamp` and says what changed.
    ///
    /// `still` is the file's stamp after the load: if it moved, the file was
    /// being written while it was read and the outcome is thrown away.
    pub(crate) fn decide(
        &mut self,
        file: &Path,
        stamp: Stamp,
        still: Option<Stamp>,
        outcome: Result<P, FileRefusal>,
        now: Instant,
    ) -> Vec<PluginEvent<P>> {
        if still != Some(stamp) {
            // Changed under us (or gone): the next observation starts settling again.
            if let Some(entry) = self.files.get_mut(file) {
                entry.settling = None;
            }
            return Vec::new();
        }
        let young = stamp.age() < self.timing.grace;
        let plugin = match outcome {
            Ok(plugin) => plugin,
            Err(_) if young => {
                // Probably still being written by something slow (or its signature not yet
                // beside it): try again after the grace.
                if let Some(entry) = self.files.get_mut(file) {
                    let wait = self.timing.grace.saturating_sub(stamp.age());
                    entry.settling = Some((stamp, now + wait));
                }
                return Vec::new();
            }
            Err(refusal) => {
                self.arbiter.stop_waiting(file);
                return self.refuse(file, stamp, refusal);
            }
        };
        let kind = KindKey::of(plugin.info());
        self.arbiter.stop_waiting(file);
        if let Err(serving) = self.arbiter.claim(&kind, file) {
            let reason = FileRefusal::Conflict { kind, serving };
            return self.refuse(file, stamp, reason);
        }
        let entry = self.files.entry(file.to_path_buf()).or_default();
        entry.decided = Some(stamp);
        entry.settling = None;
        let previous = entry.serving.replace(plugin.clone());
        let file = file.to_path_buf();
        match previous {
            None => vec![PluginEvent::Added { file, plugin }],
            Some(old) if old.sha256() == plugin.sha256() => Vec::new(),
            Some(old) if KindKey::of(old.info()) == kind => {
                vec![PluginEvent::Replaced {
                    file,
                    old,
                    new: plugin,
                }]
            }
            Some(old) => {
                // Same file, another kind: the old kind stops, the new one starts.
                self.release(&KindKey::of(old.info()));
                vec![
                    PluginEvent::Removed {
                        file: file.clone(),
                        plugin: old,
                    },
                    PluginEvent::Added { file, plugin },
                ]
            }
        }
    }

    fn refuse(&mut self, file: &Path, stamp: Stamp, reason: FileRefusal) -> Vec<PluginEvent<P>> {
        let entry = self.files.entry(file.to_path_buf()).or_default();
        entry.decided = Some(stamp);
        entry.settling = None;
        vec![PluginEvent::Refused {
            file: file.to_path_buf(),
            reason,
        }]
    }

    /// Frees `kind` and lets files refused for claiming it try again.
    fn release(&mut self, kind: &KindKey) {
        for file in self.arbiter.release(kind) {
            if let Some(entry) = self.files.get_mut(&file) {
                entry.decided = None;
            }
        }
    }

    /// `*.wasm` files directly in the directory, skipping Kubernetes' `..data`
    /// machinery and hidden files (editors' and copiers' temporaries).
    fn list(&self) -> io::Result<BTreeMap<PathBuf, Stamp>> {
        let mut out = BTreeMap::new();
        for item in fs::read_dir(&self.dir)? {
            let path = item?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if name.starts_with('.') || !name.ends_with(".wasm") {
                continue;
            }
            if self
                .only
                .as_ref()
                .is_some_and(|only| !only.contains(std::ffi::OsStr::new(name)))
            {
                continue;
            }
            // A dangling symlink or a file removed since `read_dir` is simply absent.
            if let Ok(meta) = fs::metadata(&path)
                && meta.is_file()
                && let Ok(file) = Identity::from_meta(&meta)
            {
                let stamp = Stamp::with_signature(&path, file);
                out.insert(path, stamp);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
#[path = "dir_tests.rs"]
mod tests;
