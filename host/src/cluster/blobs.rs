//! Pulled components on local disk, by digest: a restart serves them without asking the registry.
//!
//! Layout under the host's cache directory:
//! - `components/SHA256.wasm`: a component, named by its own sha256 (checked before it is written);
//! - `manifests/SHA256`: the hex sha256 of the component a manifest digest points at.
//!
//! Both are written to a temporary file and renamed into place, so a file is complete or absent;
//! a directory removed underneath is created again on the next write.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Components pulled earlier, and which manifest digest names which component.
#[derive(Clone, Debug)]
pub struct Blobs {
    dir: PathBuf,
}

/// A component on disk and its sha256 (hex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredComponent {
    /// The file.
    pub path: PathBuf,
    /// The sha256 of its bytes, as hex.
    pub sha256: String,
}

impl Blobs {
    /// The store under `cache_dir`, its directories created if missing.
    pub fn open(cache_dir: &Path) -> std::io::Result<Blobs> {
        let blobs = Blobs {
            dir: cache_dir.to_owned(),
        };
        std::fs::create_dir_all(blobs.dir.join("components"))?;
        std::fs::create_dir_all(blobs.dir.join("manifests"))?;
        Ok(blobs)
    }

    /// The component the manifest `digest` (`sha256:…`) points at, if it was stored.
    pub fn get(&self, digest: &str) -> Option<StoredComponent> {
        let sha256 = std::fs::read_to_string(self.manifest_path(digest)?).ok()?;
        let sha256 = sha256.trim();
        if !is_hex_sha256(sha256) {
            return None;
        }
        let path = self.component_path(sha256);
        path.is_file().then(|| StoredComponent {
            path,
            sha256: sha256.to_owned(),
        })
    }

    /// Stores `component` as what manifest `digest` points at, after checking it hashes to
    /// `sha256` (what the registry client verified against the manifest).
    pub fn put(
        &self,
        digest: &str,
        sha256: &str,
        component: &[u8],
    ) -> std::io::Result<StoredComponent> {
        let actual = hex::encode(Sha256::digest(component));
        if actual != sha256 {
            return Err(std::io::Error::other(format!(
                "component has sha256 {actual}, not {sha256}"
            )));
        }
        let manifest = self
            .manifest_path(digest)
            .ok_or_else(|| std::io::Error::other(format!("{digest:?} is not a sha256 digest")))?;
        let path = self.component_path(sha256);
        if !path.is_file() {
            crate::files::write_whole(&path, component)?;
        }
        crate::files::write_whole(&manifest, sha256.as_bytes())?;
        Ok(StoredComponent {
            path,
            sha256: sha256.to_owned(),
        })
    }

    fn component_path(&self, sha256: &str) -> PathBuf {
        self.dir.join("components").join(format!("{sha256}.wasm"))
    }

    /// `None` for anything but `sha256:` and 64 hex digits (so no path can escape the store).
    fn manifest_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        is_hex_sha256(hex).then(|| self.dir.join("manifests").join(hex))
    }
}

fn is_hex_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_component_is_found_by_its_manifest_digest_after_a_restart() {
        let tmp = tempfile::tempdir().unwrap();
        let bytes = b"\0asm component";
        let sha256 = hex::encode(Sha256::digest(bytes));
        let digest = format!("sha256:{}", "a".repeat(64));
        let stored = Blobs::open(tmp.path())
            .unwrap()
            .put(&digest, &sha256, bytes)
            .unwrap();
        let again = Blobs::open(tmp.path()).unwrap();
        assert_eq!(again.get(&digest), Some(stored.clone()));
        assert_eq!(std::fs::read(&stored.path).unwrap(), bytes);
        assert_eq!(again.get(&format!("sha256:{}", "b".repeat(64))), None);
    }

    #[test]
    fn a_store_removed_under_a_running_host_is_recreated_by_the_next_put() {
        let tmp = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(&tmp.path().join("store")).unwrap();
        std::fs::remove_dir_all(tmp.path().join("store")).unwrap();
        let bytes = b"\0asm component";
        let sha256 = hex::encode(Sha256::digest(bytes));
        let digest = format!("sha256:{}", "c".repeat(64));
        assert_eq!(blobs.get(&digest), None);
        let stored = blobs.put(&digest, &sha256, bytes).unwrap();
        assert_eq!(blobs.get(&digest), Some(stored));
    }

    #[test]
    fn bytes_that_do_not_hash_to_the_digest_are_not_stored() {
        let tmp = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(tmp.path()).unwrap();
        let digest = format!("sha256:{}", "a".repeat(64));
        let err = blobs.put(&digest, &"0".repeat(64), b"other").unwrap_err();
        assert!(err.to_string().contains("not 0000"), "{err}");
        assert_eq!(blobs.get(&digest), None);
        assert!(blobs.get("sha256:../../etc/passwd").is_none());
    }
}
