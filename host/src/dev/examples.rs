//! Applies a directory of manifests (YAML or JSON, several documents per file) with server-side apply.

use std::path::{Path, PathBuf};

use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{self, Scope};
use kube::{Client, ResourceExt};

/// Why a manifest could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The directory or a file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not YAML, or a document in it is not a Kubernetes object; the parser's
    /// message names the line and column.
    #[error("{} is not a stream of Kubernetes objects", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: crate::yaml::Error,
    },
    /// The API server does not serve the object's kind, or refused it.
    #[error("{}: {kind} {name}", path.display())]
    Api {
        /// The file.
        path: PathBuf,
        /// `apiVersion/kind` of the object.
        kind: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// Applies every `*.yaml`, `*.yml` and `*.json` file in `dir` (sorted by name);
/// namespaced objects without a namespace go to `default`. Returns one line per object.
pub async fn apply_dir(client: &Client, dir: &Path) -> Result<Vec<String>, ApplyError> {
    let read_err = |path: &Path| {
        let path = path.to_owned();
        move |source| ApplyError::Read { path, source }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_err(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    let mut lines = Vec::new();
    for path in files {
        for obj in read_objects(&path)? {
            lines.push(apply_one(client, &path, obj).await?);
        }
    }
    Ok(lines)
}

/// The objects in one file: every document of a `---` separated stream, empty ones left out.
fn read_objects(path: &Path) -> Result<Vec<DynamicObject>, ApplyError> {
    let text = std::fs::read_to_string(path).map_err(|source| ApplyError::Read {
        path: path.to_owned(),
        source,
    })?;
    crate::yaml::from_documents(&text).map_err(|source| ApplyError::Parse {
        path: path.to_owned(),
        source,
    })
}

async fn apply_one(client: &Client, path: &Path, obj: DynamicObject) -> Result<String, ApplyError> {
    let types = obj.types.clone().unwrap_or_default();
    let name = obj.name_any();
    let api_err = |source| ApplyError::Api {
        path: path.to_owned(),
        kind: format!("{}/{}", types.api_version, types.kind),
        name: name.clone(),
        source,
    };
    let (group, version) = match types.api_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), types.api_version.clone()),
    };
    let gvk = GroupVersionKind::gvk(&group, &version, &types.kind);
    let (resource, caps) = discovery::pinned_kind(client, &gvk)
        .await
        .map_err(api_err)?;
    let (api, at): (Api<DynamicObject>, String) = match caps.scope {
        Scope::Namespaced => {
            let ns = obj.namespace().unwrap_or_else(|| "default".to_owned());
            (
                Api::namespaced_with(client.clone(), &ns, &resource),
                format!("{ns}/"),
            )
        }
        Scope::Cluster => (Api::all_with(client.clone(), &resource), String::new()),
    };
    api.patch(
        &name,
        &PatchParams::apply("weir-dev").force(),
        &Patch::Apply(&obj),
    )
    .await
    .map_err(api_err)?;
    Ok(format!(
        "applied {} {at}{name} from {}",
        types.kind,
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blog.yaml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn every_document_of_a_stream_is_an_object_and_empty_ones_are_skipped() {
        let (_dir, path) = written(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\
             ---\napiVersion: weir.dev/v1alpha1\nkind: Blog\nmetadata: {name: b}\n",
        );
        let names: Vec<String> = read_objects(&path)
            .unwrap()
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn a_bad_manifest_is_reported_with_its_file_line_and_column() {
        let (_dir, path) = written(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [b\n",
        );
        let err = read_objects(&path).unwrap_err();
        let shown = crate::chain::Chain(&err).to_string();
        assert!(shown.starts_with(&path.display().to_string()), "{shown}");
        assert!(shown.contains("line 8"), "{shown}");
        assert!(shown.contains("column"), "{shown}");
    }
}
