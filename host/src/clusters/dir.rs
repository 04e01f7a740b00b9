//! The directory of member kubeconfigs, read as changes: which clusters to engage, which to release.
//!
//! One cluster per regular file, named by the file's stem (`member-a.yaml` is `member-a`).
//! Hidden files (a name starting with `.`) are skipped: an installer writes a hidden temporary
//! and renames it, and a mounted Secret or ConfigMap keeps its `..data` links there. A file
//! whose content changed is handed over again with its new content (the source rotates the
//! cluster's credentials, or engages it anew at another server); a file that went releases
//! its cluster. A file that is refused ([`super::kubeconfig::read_checked`]) is reported by
//! path and changes nothing else: a new one is not engaged, an engaged cluster whose file
//! turns bad keeps its last good configuration (and is released when the file goes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kube::config::Kubeconfig;
use sha2::{Digest, Sha256};

use super::kubeconfig::{KubeconfigError, read_checked};

/// What one scan of the directory asks for.
#[derive(Debug, Default)]
pub struct Changes {
    /// Clusters to engage (new ones, and engaged ones whose file changed), by name.
    pub engage: Vec<(String, PathBuf, Kubeconfig)>,
    /// Clusters whose file went.
    pub release: Vec<String>,
    /// Files refused in this scan (each said once until its content changes again).
    pub refused: Vec<KubeconfigError>,
}

/// What the directory held at the last scan: each cluster's file and its content's digest.
#[derive(Debug)]
pub struct DirState {
    dir: PathBuf,
    /// Name → digest of the content last engaged or refused, and whether it was engaged.
    seen: BTreeMap<String, (PathBuf, [u8; 32], bool)>,
}

impl DirState {
    /// Nothing seen yet in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            seen: BTreeMap::new(),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads the directory and says what changed since the last scan. An unreadable directory
    /// changes nothing (the error is the only refusal).
    pub fn scan(&mut self) -> Changes {
        let mut changes = Changes::default();
        let files = match self.files() {
            Ok(files) => files,
            Err(source) => {
                changes.refused.push(KubeconfigError::Read {
                    path: self.dir.clone(),
                    source,
                });
                return changes;
            }
        };
        let gone: Vec<String> = self
            .seen
            .keys()
            .filter(|name| !files.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            if let Some((_, _, true)) = self.seen.remove(&name) {
                changes.release.push(name);
            }
        }
        for (name, path) in files {
            let Ok(bytes) = std::fs::read(&path) else {
                // Gone between the listing and the read: the next scan sees it gone.
                continue;
            };
            let digest: [u8; 32] = Sha256::digest(&bytes).into();
            let engaged = match self.seen.get(&name) {
                Some((_, seen, _)) if *seen == digest => continue,
                Some((_, _, engaged)) => *engaged,
                None => false,
            };
            match read_checked(&path) {
                Ok(config) => {
                    self.seen.insert(name.clone(), (path.clone(), digest, true));
                    changes.engage.push((name, path, config));
                }
                Err(e) => {
                    // An engaged cluster keeps its last good configuration.
                    self.seen.insert(name, (path, digest, engaged));
                    changes.refused.push(e);
                }
            }
        }
        changes
    }

    /// A cluster's engagement failed after its file was accepted (no client could be built):
    /// it is not engaged, and its file is read again only once its content changes.
    pub fn not_engaged(&mut self, name: &str) {
        if let Some(seen) = self.seen.get_mut(name) {
            seen.2 = false;
        }
    }

    /// The regular, non-hidden files of the directory by cluster name (their stem).
    fn files(&self) -> std::io::Result<BTreeMap<String, PathBuf>> {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let path = entry?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            // Follows symlinks: a mounted Secret's files are links into `..data`.
            if name.starts_with('.') || !path.is_file() {
                continue;
            }
            let stem = Path::new(name)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(name);
            files.insert(stem.to_owned(), path.clone());
        }
        Ok(files)
    }
}

#[cfg(test)]
#[path = "dir_tests.rs"]
mod tests;
