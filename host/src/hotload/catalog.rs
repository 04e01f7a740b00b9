//! The plugins currently served, for `weir plugins` and the `/plugins` endpoint.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::SystemTime;

use serde::Serialize;

use super::arbiter::KindKey;
use super::dir::{Loaded, PluginEvent};
use crate::plugin::PluginInfo;

/// One served plugin as listed to users.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogRow {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Parent kind, `Kind.group`.
    pub kind: String,
    /// The component file.
    pub file: PathBuf,
    /// Hex sha256 of the component file.
    pub sha256: String,
    /// When this version started serving (RFC 3339).
    pub loaded_at: String,
    /// Everything the plugin declared (kinds, finalizer, CRD).
    #[serde(skip)]
    pub info: PluginInfo,
}

/// Served plugins by parent kind; clones share one table.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    rows: Arc<RwLock<BTreeMap<KindKey, CatalogRow>>>,
    scanned: Arc<AtomicBool>,
    loading: Arc<RwLock<Option<PathBuf>>>,
}

impl Catalog {
    /// The rows, ordered by kind.
    pub fn rows(&self) -> Vec<CatalogRow> {
        self.rows
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// Whether every file found so far has been loaded or refused at least once (none is
    /// still settling), so an empty catalog means "nothing to serve", not "not looked yet".
    pub fn scanned(&self) -> bool {
        self.scanned.load(Ordering::Acquire)
    }

    pub(crate) fn mark_scanned(&self) {
        self.scanned.store(true, Ordering::Release);
    }

    /// The file being loaded (compiled) right now, if any.
    pub fn loading(&self) -> Option<PathBuf> {
        self.loading
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_loading(&self, file: Option<PathBuf>) {
        *self.loading.write().unwrap_or_else(PoisonError::into_inner) = file;
    }

    /// Number of kinds served.
    pub fn len(&self) -> usize {
        self.rows
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether nothing is served.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn apply<P: Loaded>(&self, event: &PluginEvent<P>) {
        let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            PluginEvent::Added { file, plugin }
            | PluginEvent::Replaced {
                file, new: plugin, ..
            } => {
                rows.insert(KindKey::of(plugin.info()), row(file, plugin));
            }
            PluginEvent::Removed { plugin, .. } => {
                rows.remove(&KindKey::of(plugin.info()));
            }
            PluginEvent::Refused { .. } => {}
        }
    }
}

fn row<P: Loaded>(file: &std::path::Path, plugin: &P) -> CatalogRow {
    let info = plugin.info();
    let loaded_at = k8s_openapi::jiff::Timestamp::try_from(SystemTime::now())
        .map(|t| t.to_string())
        .unwrap_or_default();
    CatalogRow {
        name: info.name.clone(),
        version: info.version.clone(),
        kind: KindKey::of(info).to_string(),
        file: file.to_path_buf(),
        sha256: plugin.sha256(),
        loaded_at,
        info: info.clone(),
    }
}
