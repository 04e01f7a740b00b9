//! The directory of member kubeconfigs, listed: one cluster per file, named by its stem.
//!
//! One cluster per regular file, named by the file's stem (`member-a.yaml` is `member-a`).
//! Hidden files (a name starting with `.`) are skipped: an installer writes a hidden temporary
//! and renames it, and a mounted Secret or ConfigMap keeps its `..data` links there. What
//! changed since the last scan is [`super::seen::Seen`]'s to say: a file whose content changed
//! is handed over again, a file that went releases its cluster, a refused file is reported by
//! path. A file has no labels: a policy granting clusters by label grants none of these.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::kubeconfig::{KubeconfigError, Origin};
use super::seen::{Changes, Listed, Seen};

/// The directory and what it held at the last scan.
#[derive(Debug)]
pub struct DirState {
    dir: PathBuf,
    seen: Seen,
}

impl DirState {
    /// Nothing seen yet in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            seen: Seen::default(),
        }
    }

    /// Reads the directory and says what changed since the last scan. An unreadable directory
    /// changes nothing (the error is the only refusal).
    pub fn scan(&mut self) -> Changes {
        let files = match self.files() {
            Ok(files) => files,
            Err(source) => {
                let mut changes = Changes::default();
                changes.refused.push(KubeconfigError::Read {
                    path: self.dir.clone(),
                    source,
                });
                return changes;
            }
        };
        let mut listed = Vec::with_capacity(files.len());
        for (name, path) in files {
            let text = match std::fs::read(&path) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                // Gone between the listing and the read: the next scan sees it gone.
                Err(_) => continue,
            };
            listed.push(Listed {
                name,
                origin: Origin::File(path),
                text: Ok(text),
                labels: BTreeMap::new(),
            });
        }
        self.seen.diff(listed)
    }

    /// A cluster's engagement failed after its file was accepted (no client could be built):
    /// it is not engaged, and its file is read again only once its content changes.
    pub fn not_engaged(&mut self, name: &str) {
        self.seen.not_engaged(name);
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
