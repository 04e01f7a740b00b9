//! Applies a directory of manifests (YAML or JSON, several documents per file) with server-side apply.

use std::path::{Path, PathBuf};

use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{self, Scope};
use kube::{Client, ResourceExt};
use serde::Deserialize;

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
    /// A document is not a Kubernetes object.
    #[error("{}: document {index} is not a Kubernetes object", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Zero-based document index in the file.
        index: usize,
        /// The parser's error.
        #[source]
        source: serde_yaml::Error,
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
        let text = std::fs::read_to_string(&path).map_err(read_err(&path))?;
        for (index, doc) in serde_yaml::Deserializer::from_str(&text).enumerate() {
            let value =
                serde_yaml::Value::deserialize(doc).map_err(|source| ApplyError::Parse {
                    path: path.clone(),
                    index,
                    source,
                })?;
            if value.is_null() {
                continue;
            }
            let obj: DynamicObject =
                serde_yaml::from_value(value).map_err(|source| ApplyError::Parse {
                    path: path.clone(),
                    index,
                    source,
                })?;
            lines.push(apply_one(client, &path, obj).await?);
        }
    }
    Ok(lines)
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
