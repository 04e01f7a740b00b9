//! Saves the store to a state file and loads it back, so an emulator can restart with its objects.
//!
//! A state file is one JSON document: a format number, the resourceVersion counter, and every
//! stored object of every resource exactly as stored (uid, generation, timestamps,
//! `managedFields`, finalizers). CustomResourceDefinitions are objects like the others; loading
//! one serves its kinds again. The watch history is not saved: a loaded store starts with an
//! empty one, so resuming a watch from a resourceVersion before the restart answers 410, as from
//! kube-apiserver after a restart. A file is written to a temporary file beside it and renamed
//! over it, so a crash mid-write leaves the previous state.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kinds::resources::ResKey;
use crate::store::{ObjKey, Store};
use crate::wire::object;
use crate::wire::stored::Stored;
use crate::write::crd;
use crate::write::gc;

/// The layout version written in every state file; another one is refused.
const FORMAT: u32 = 1;

/// A state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Reading the file failed.
    #[error("could not read the state file {path}")]
    Read {
        /// The state file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a state file.
    #[error("{path} is not an emulator state file")]
    Parse {
        /// The state file.
        path: PathBuf,
        /// Where the JSON did not fit.
        #[source]
        source: serde_json::Error,
    },
    /// The file was written in another layout.
    #[error(
        "{path} has state format {found}; this emulator reads format {}",
        FORMAT
    )]
    Format {
        /// The state file.
        path: PathBuf,
        /// The format it declares.
        found: u32,
    },
    /// Writing the file (or renaming it into place) failed.
    #[error("could not write the state file {path}")]
    Write {
        /// The state file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The file's layout; objects are `&Value` when written and `Value` when read.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StateFile<O> {
    format: u32,
    resource_version: u64,
    resources: Vec<Resource<O>>,
}

/// The one field every layout starts with.
#[derive(Deserialize)]
struct Header {
    format: u32,
}

/// The objects of one resource (group and plural, as stored: served versions share them).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Resource<O> {
    group: String,
    plural: String,
    objects: Vec<O>,
}

/// A stored object written out through its parsed form, one object at a time.
struct Parsed<'a>(&'a Stored);

impl Serialize for Parsed<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.value().serialize(serializer)
    }
}

/// The store's objects and resourceVersion counter at one moment, without the watch history.
pub struct Snapshot {
    rv: u64,
    resources: Vec<(ResKey, Vec<Arc<Stored>>)>,
}

impl Snapshot {
    /// Take the store's contents (shared, not copied: the lock is held only for this).
    pub fn of(store: &Store) -> Snapshot {
        let mut resources: Vec<(ResKey, Vec<Arc<Stored>>)> = store
            .resources()
            .into_iter()
            .map(|res| {
                let objects = store.list(&res, None);
                (res, objects)
            })
            .collect();
        resources.sort_by(|a, b| a.0.cmp(&b.0));
        Snapshot {
            rv: store.current_rv(),
            resources,
        }
    }

    /// A store holding these objects, its CRDs' kinds served, resuming at this resourceVersion
    /// with an empty watch history (see [`Store::restored`]).
    pub fn into_store(self, history_cap: usize) -> Store {
        let objects = self.resources.into_iter().flat_map(|(res, objects)| {
            objects.into_iter().map(move |obj| {
                let obj = obj.value();
                let key = ObjKey {
                    res: res.clone(),
                    ns: object::namespace(&obj).to_string(),
                    name: object::name(&obj).to_string(),
                };
                (key, obj)
            })
        });
        let mut store = Store::restored(history_cap, self.rv, objects);
        let crds = ResKey {
            group: "apiextensions.k8s.io".into(),
            plural: "customresourcedefinitions".into(),
        };
        for crd in store.list(&crds, None) {
            crd::register(&mut store, &crd.value());
        }
        for res in store.resources() {
            for key in store.keys(&res) {
                if store.get(&key).is_some_and(|o| gc::waits_on_dependents(&o)) {
                    store.pending_owners.insert(key);
                }
            }
        }
        store
    }

    /// Write to `path` atomically: a temporary file beside it, synced, then renamed over it.
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        let file = StateFile {
            format: FORMAT,
            resource_version: self.rv,
            resources: self
                .resources
                .iter()
                .map(|(res, objects)| Resource {
                    group: res.group.clone(),
                    plural: res.plural.clone(),
                    objects: objects.iter().map(|o| Parsed(o)).collect::<Vec<_>>(),
                })
                .collect(),
        };
        let write_err = |source| StateError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".{}.tmp", std::process::id()));
        let temp = path.with_file_name(name);
        let written = (|| {
            let mut out = std::io::BufWriter::new(std::fs::File::create(&temp)?);
            serde_json::to_writer_pretty(&mut out, &file)?;
            out.write_all(b"\n")?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&temp, path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(write_err)
    }

    /// Read the state file at `path`; `None` when there is none yet.
    pub fn load(path: &Path) -> Result<Option<Snapshot>, StateError> {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StateError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let parse_err = |source| StateError::Parse {
            path: path.to_path_buf(),
            source,
        };
        // The format first, so that a file of another layout says so rather than "unknown field".
        let header: Header = serde_json::from_slice(&text).map_err(parse_err)?;
        if header.format != FORMAT {
            return Err(StateError::Format {
                path: path.to_path_buf(),
                found: header.format,
            });
        }
        let file: StateFile<Value> = serde_json::from_slice(&text).map_err(parse_err)?;
        Ok(Some(Snapshot {
            rv: file.resource_version,
            resources: file
                .resources
                .into_iter()
                .map(|r| {
                    let res = ResKey {
                        group: r.group,
                        plural: r.plural,
                    };
                    let objects = r.objects.iter().map(|o| Arc::new(Stored::new(o)));
                    (res, objects.collect())
                })
                .collect(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(plural: &str, name: &str) -> ObjKey {
        ObjKey {
            res: ResKey {
                group: String::new(),
                plural: plural.into(),
            },
            ns: "default".into(),
            name: name.into(),
        }
    }

    fn configmap(name: &str, uid: &str, extra: Value) -> Value {
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "uid": uid}});
        if let (Some(meta), Value::Object(more)) = (object::metadata_mut(&mut obj), extra) {
            meta.extend(more);
        }
        obj
    }

    #[test]
    fn a_store_read_back_from_its_file_keeps_objects_indexes_and_pending_deletions() {
        let mut store = Store::new(100);
        let owner = key("configmaps", "owner");
        let dependent = key("configmaps", "dependent");
        store.put(
            &owner,
            configmap(
                "owner",
                "u-1",
                json!({"deletionTimestamp": "2026-01-01T00:00:00Z",
                       "finalizers": ["foregroundDeletion"]}),
            ),
        );
        store.put(
            &dependent,
            configmap(
                "dependent",
                "u-2",
                json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                            "name": "owner", "uid": "u-1"}]}),
            ),
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        Snapshot::of(&store).save(&path).unwrap();

        let loaded = Snapshot::load(&path).unwrap().unwrap().into_store(100);
        assert_eq!(loaded.current_rv(), store.current_rv());
        assert_eq!(loaded.get(&dependent), store.get(&dependent));
        assert!(loaded.has_uid("u-1"));
        assert_eq!(loaded.dependents_of("u-1"), vec![dependent]);
        assert!(
            loaded.pending_owners.contains(&owner),
            "the collector resumes the foreground deletion"
        );
        assert!(
            loaded.watch_from(store.current_rv() - 1).is_err(),
            "no watch history"
        );
    }

    #[test]
    fn a_missing_state_file_is_no_state() {
        let loaded = Snapshot::load(Path::new("/nonexistent/weir-state.json")).unwrap();
        assert!(loaded.is_none());
    }
}
