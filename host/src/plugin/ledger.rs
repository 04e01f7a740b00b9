//! The plugins an engine has loaded and the compiled code each keeps, counted while a handle lives.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// The plugins an engine has loaded and the code each keeps.
#[derive(Default)]
pub(super) struct Ledger {
    loaded: Mutex<Vec<Entry>>,
}

struct Entry {
    plugin: String,
    sha256: String,
    code_bytes: u64,
    alive: Weak<()>,
}

impl Ledger {
    /// Counts a loaded plugin until the returned token is dropped (with the plugin).
    pub(super) fn count(&self, plugin: &str, sha256: &str, code_bytes: u64) -> Arc<()> {
        let token = Arc::new(());
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.retain(|e| e.alive.strong_count() > 0);
        loaded.push(Entry {
            plugin: plugin.to_owned(),
            sha256: sha256.to_owned(),
            code_bytes,
            alive: Arc::downgrade(&token),
        });
        token
    }

    /// Compiled code bytes per plugin name, each component counted once.
    pub(super) fn code_bytes(&self) -> BTreeMap<String, u64> {
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seen = std::collections::HashSet::new();
        let mut bytes = BTreeMap::new();
        for e in loaded.iter().filter(|e| e.alive.strong_count() > 0) {
            if seen.insert((&e.plugin, &e.sha256)) {
                *bytes.entry(e.plugin.clone()).or_default() += e.code_bytes;
            }
        }
        bytes
    }
}
