//! Hot-loading: watch the plugins directory and turn file changes into plugin changes.
//!
//! The host's directory source (`crate::manager::PluginSource::Directory`, which `weir run
//! --plugins DIR` and `weir dev` use) starts one [`HotLoader`] on DIR. It
//! loads every settled `*.wasm` file (one at a time, off the reconcile path,
//! logging how long each compile took) and sends a [`PluginEvent`] for each
//! change in what DIR serves:
//!
//! - [`PluginEvent::Added`]: a file serves a parent kind nobody served. The
//!   runtime starts a controller for it.
//! - [`PluginEvent::Replaced`]: a served file changed. The runtime swaps the
//!   plugin for that kind (reconciles already running finish on the old one)
//!   and re-reconciles every object of the kind, because its desired state may
//!   have changed with the logic.
//! - [`PluginEvent::Removed`]: a served file went away. The runtime stops the
//!   kind's controller. **Children stay as they are**: nothing deletes them,
//!   and nothing reconciles them until a plugin for the kind is loaded again.
//! - [`PluginEvent::Refused`]: a file that is not a valid plugin, that
//!   claims a kind another file serves, or whose signature does not verify. It
//!   is logged once (naming both files for a conflict) and counted in
//!   `weir_plugin_refusals_total`; whatever served before keeps serving.
//!
//! With a verification policy (`weir run --verification-policy`) each file is
//! held to it at its `level.directory` before anything of it runs: its
//! detached signature `FILE.sig` is checked over the bytes read once, and those
//! very bytes are compiled (see `signed.rs`); the `candidates/` folder alike.
//!
//! See `dir.rs` for how half-written files and ConfigMap volume updates are told apart.
//!
//! The cluster source (`crate::manager::PluginSource::Cluster`, `weir run
//! --plugins-from-cluster`) sends the same events from `Plugin` objects instead of files: see
//! [`ClusterLoader`]. Both decide which of their entries serves a kind with one `arbiter`, and
//! every source, a fixed list too, reaches the host as one [`Source`].

mod arbiter;
mod catalog;
mod cluster;
mod crd;
mod dir;
mod metrics;
mod signed;
mod source;
mod watcher;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use arbiter::KindKey;
pub use catalog::{Catalog, CatalogRow};
pub use cluster::{ClusterConfig, ClusterLoader};
pub use crd::{CrdError, install_crd};
pub use dir::{FileRefusal, Loaded, PluginEvent, Timing};
pub use metrics::HotloadMetrics;
pub use source::{
    CANDIDATES_DIR, CandidateEvents, Events, RefusedAfterLoad, Running, ServingOf, Source,
};
pub use watcher::HotLoader;

/// Errors starting the hot loader.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The plugins directory does not exist or is not a directory.
    #[error("plugins directory {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The file watcher could not be set up on the directory.
    #[error("cannot watch plugins directory {}", dir.display())]
    Watch {
        /// The directory.
        dir: PathBuf,
        /// What notify said.
        #[source]
        source: notify::Error,
    },
    /// The cluster source's component store could not be created.
    #[error("cannot use {} to store pulled components", dir.display())]
    Store {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The background thread could not be started.
    #[error("cannot start the plugin loader thread")]
    Thread(#[source] std::io::Error),
}

/// Result of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a component file into a plugin; the sandbox's engine in production.
///
/// Called on the loader's own thread, one file at a time: loads may compile for seconds.
pub trait Loader: Send + 'static {
    /// What a successful load gives.
    type Plugin: Loaded;
    /// Why a load failed; its `Display` (and sources) make the refusal's log line.
    type Error: std::error::Error + Send + Sync + 'static;
    /// Loads and validates one component, `bytes` as read from `file` (the directory source
    /// reads them once, checks their signature, and has exactly those compiled).
    fn load(&self, file: &Path, bytes: &[u8]) -> std::result::Result<Self::Plugin, Self::Error>;

    /// Loads a file whose sha256 (hex) a source verified when it stored it (the cluster
    /// source's component store), so the loader need not read and hash it again when its
    /// compiled form is cached.
    fn load_verified(
        &self,
        file: &Path,
        sha256: &str,
    ) -> std::result::Result<Self::Plugin, Self::Error>;

    /// The CamelCase reason a Plugin's status gives for `error` (`NotAComponent`,
    /// `WrongContract`, ...); by default `LoadFailed`.
    fn reason(error: &Self::Error) -> &'static str {
        let _ = error;
        "LoadFailed"
    }
}

/// How the hot loader watches.
#[derive(Clone, Debug)]
pub struct Config {
    /// The directory of `*.wasm` components.
    pub dir: PathBuf,
    /// Settle and grace times for files being written.
    pub timing: Timing,
    /// Quiet time after a watch event before the directory is scanned, so a
    /// burst of events (a copy, a ConfigMap swap) makes one scan.
    pub debounce: Duration,
    /// Scan this often even without events, in case the watcher missed one.
    pub rescan_every: Duration,
    /// Serve only these file names from `dir` (`weir dev --plugin FILE`); `None` serves every `*.wasm`.
    pub only: Option<BTreeSet<OsString>>,
    /// The verification policy each file's detached signature (`FILE.sig`) is held to, at its
    /// `level.directory`, before anything of the file runs; the manager sets it from
    /// [`crate::manager::ManagerConfig::verification`]. `None` checks no signature.
    pub verification: Option<Arc<crate::trust::Policy>>,
}

impl Config {
    /// Defaults: a copied file must hold still for 100 ms, and one that fails to load is
    /// retried for 2 s after its last write before it is refused (a writer that pauses).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            timing: Timing {
                settle: Duration::from_millis(100),
                grace: Duration::from_secs(2),
            },
            debounce: Duration::from_millis(50),
            rescan_every: Duration::from_secs(10),
            only: None,
            verification: None,
        }
    }
}

/// Loads files with the sandbox's engine (its compile cache makes a reload of known bytes cheap).
#[derive(Clone)]
pub struct EngineLoader {
    /// The shared engine.
    pub engine: crate::plugin::Engine,
    /// Limits every loaded plugin's calls run under.
    pub limits: crate::plugin::Limits,
}

impl Loader for EngineLoader {
    type Plugin = crate::plugin::Plugin;
    type Error = crate::plugin::LoadError;
    fn load(&self, file: &Path, bytes: &[u8]) -> std::result::Result<Self::Plugin, Self::Error> {
        self.engine
            .load_bytes(&file.display().to_string(), bytes, self.limits)
    }

    fn load_verified(
        &self,
        file: &Path,
        sha256: &str,
    ) -> std::result::Result<Self::Plugin, Self::Error> {
        self.engine.load_verified(file, sha256, self.limits)
    }

    fn reason(error: &Self::Error) -> &'static str {
        load_reason(error)
    }
}

/// The status reason for a component that does not load.
pub fn load_reason(error: &crate::plugin::LoadError) -> &'static str {
    use crate::plugin::LoadError;
    match error {
        LoadError::Engine { .. } | LoadError::Io { .. } => "LoadFailed",
        LoadError::NotAComponent { .. } => "NotAComponent",
        LoadError::Compile { .. } => "CompileFailed",
        LoadError::WrongContract { .. } => "WrongContract",
        LoadError::Describe { .. } => "DescribeFailed",
    }
}

impl Loaded for crate::plugin::Plugin {
    fn info(&self) -> &crate::plugin::PluginInfo {
        crate::plugin::Plugin::info(self)
    }
    fn sha256(&self) -> String {
        crate::plugin::Plugin::sha256(self).to_owned()
    }
}
