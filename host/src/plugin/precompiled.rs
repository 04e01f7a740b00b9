//! Precompiled components on disk, keyed by component digest and engine configuration.
//!
//! A restart of the host finds each plugin's machine code here and maps it
//! (`Component::deserialize_file`) instead of compiling it again: milliseconds
//! for a 20 MB Python component where a compile takes seconds and wasmtime's
//! own cache (which hashes, reads and decompresses the artifact) ~180 ms.
//!
//! Layout: `DIR/precompiled/ENGINE/SHA256.cwasm`, where `ENGINE` is a hash of
//! everything in the engine's configuration that changes the compiled code
//! (wasmtime's `precompile_compatibility_hash`: target, compiler flags,
//! tunables, features, wasmtime version) and `SHA256` is the component's own
//! digest. Artifacts are written to a temporary file in the same directory and
//! renamed into place, so a reader never sees half a file. A file that does not
//! load (another wasmtime, a truncated or foreign file) is removed and the
//! component compiled again.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

/// Precompiled artifacts of one engine configuration.
#[derive(Debug)]
pub(super) struct Precompiled {
    /// `DIR/precompiled/ENGINE`.
    dir: PathBuf,
}

impl Precompiled {
    /// The directory for `engine`'s configuration under `cache_dir`, created if missing
    /// (the engine refuses to start otherwise: a configured cache that silently does
    /// nothing would hide a slow restart).
    pub(super) fn open(cache_dir: &Path, engine: &wasmtime::Engine) -> Result<Precompiled, String> {
        let dir = cache_dir
            .join("precompiled")
            .join(engine_key(engine).get(..16).unwrap_or_default());
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("precompiled plugin directory {}: {e}", dir.display()))?;
        Ok(Precompiled { dir })
    }

    /// The component whose bytes have this sha256 (hex), if its artifact is
    /// here and loads; an artifact that does not load is removed.
    pub(super) fn lookup(&self, engine: &wasmtime::Engine, sha256: &str) -> Option<Component> {
        let path = self.path(sha256);
        if !path.is_file() {
            return None;
        }
        match deserialize(engine, &path) {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(artifact = %path.display(), error = %format!("{e:#}"),
                    "precompiled artifact does not load: compiling again");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Stores the artifact of a component just compiled from bytes with this sha256.
    /// A failure is logged: the plugin is loaded all the same, and the next start compiles again.
    pub(super) fn store(&self, sha256: &str, component: &Component) {
        let path = self.path(sha256);
        let write = || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            let image = component.serialize()?;
            let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
            file.write_all(&image)?;
            file.as_file().sync_data()?;
            file.persist(&path)?;
            Ok(())
        };
        if let Err(e) = write() {
            tracing::warn!(artifact = %path.display(), error = %crate::chain::Chain(&*e),
                "cannot store the precompiled artifact");
        }
    }

    fn path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.cwasm"))
    }
}

/// Maps a precompiled artifact into memory as a component.
///
/// wasmtime checks the artifact's header (that it is an ELF image from this
/// wasmtime version with compatible settings) but must trust the machine code
/// inside, which is why this is `unsafe`.
#[expect(
    unsafe_code,
    reason = "the one place the host maps machine code it compiled earlier"
)]
fn deserialize(engine: &wasmtime::Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: `Component::deserialize_file` requires a file produced by
    // `Component::serialize` for an engine of compatible configuration, and
    // not modified while mapped. It holds here because:
    // - only this host writes the directory (`DIR/precompiled`, under the
    //   host's own cache directory), each artifact from `Component::serialize`
    //   into a temporary file renamed into place, so a file is complete or absent;
    // - the directory is keyed by `precompile_compatibility_hash` (the engine's
    //   target, flags, tunables, features and wasmtime version), and wasmtime
    //   checks its own header again on load;
    // - a file that fails those checks (a mismatch, a truncated or corrupt file)
    //   is an error here, and the caller removes it and compiles from the
    //   component's bytes instead;
    // - files are never rewritten in place (a new artifact is a new inode).
    unsafe { Component::deserialize_file(engine, path) }
}

/// Hex sha256 of what wasmtime says decides whether an artifact fits an engine.
fn engine_key(engine: &wasmtime::Engine) -> String {
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hex::encode(hasher.0.finalize())
}

/// A `Hasher` that feeds sha256, so that the key is the same in every process
/// (std's `DefaultHasher` promises no stability across Rust releases).
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        // Unused: the key is the full digest, read from the inner state.
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(epoch: bool) -> wasmtime::Engine {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true).epoch_interruption(epoch);
        wasmtime::Engine::new(&config).unwrap()
    }

    fn compiled(engine: &wasmtime::Engine) -> Component {
        Component::from_binary(
            engine,
            &wat::parse_str("(component (core module))").unwrap(),
        )
        .unwrap()
    }

    fn artifacts(dir: &Path) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for engine_dir in std::fs::read_dir(dir.join("precompiled")).unwrap() {
            for file in std::fs::read_dir(engine_dir.unwrap().path()).unwrap() {
                found.push(file.unwrap().path());
            }
        }
        found
    }

    #[test]
    fn a_stored_artifact_is_found_by_a_new_store_on_the_same_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let engine = engine(true);
        let store = Precompiled::open(tmp.path(), &engine).unwrap();
        assert!(store.lookup(&engine, "abc").is_none());
        store.store("abc", &compiled(&engine));
        assert_eq!(artifacts(tmp.path()).len(), 1);
        let again = Precompiled::open(tmp.path(), &engine).unwrap();
        assert!(again.lookup(&engine, "abc").is_some());
        assert!(again.lookup(&engine, "abd").is_none());
    }

    #[test]
    fn another_engine_configuration_does_not_see_the_artifact() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (engine(true), engine(false));
        Precompiled::open(tmp.path(), &a)
            .unwrap()
            .store("abc", &compiled(&a));
        let other = Precompiled::open(tmp.path(), &b).unwrap();
        assert!(other.lookup(&b, "abc").is_none());
    }

    #[test]
    fn a_corrupt_artifact_is_removed_instead_of_loaded() {
        let tmp = tempfile::tempdir().unwrap();
        let engine = engine(true);
        let store = Precompiled::open(tmp.path(), &engine).unwrap();
        store.store("abc", &compiled(&engine));
        let [path] = artifacts(tmp.path()).try_into().unwrap();
        let good = std::fs::read(&path).unwrap();
        std::fs::write(&path, &good[..good.len() / 3]).unwrap();
        assert!(store.lookup(&engine, "abc").is_none());
        assert!(!path.exists());
    }
}
