//! `weir record` and reconcile dumps: what a plugin was given on a real cluster, written as `weir test` fixtures.
//!
//! `weir record --plugin PLUGIN.wasm OUT_DIR` reads every parent of the plugin's kind from the
//! cluster, each with the children it controls (found by their controller owner reference, as
//! the host's owner index finds them) and the related objects it selects (contract 0.2.0: the
//! plugin's `select` for the parent, checked and resolved by [`Related::select`] over the listed
//! objects of its related kinds, the host's own path), and writes one fixture per parent whose
//! expectation is the plugin's own answer given those objects: children, status and requeue,
//! or the error it returns, or the host's refusal. The inputs are what the host would give the
//! plugin: no `managedFields`, observed and related Secrets without their data (the hash
//! annotation instead, [`crate::answer::redacted`]) unless `--include-secret-data`. Parents
//! being deleted are left out (the host would call `finalize`).
//!
//! `weir test NEW.wasm OUT_DIR` then answers "what would the new version change across my real
//! objects", offline: every case whose answer differs fails, and the report ends with how many
//! parents would change and which fields ([`crate::offline`]).
//!
//! Only the selected related objects are written: a new version that selects other objects
//! finds, under `weir test`, only those the serving one read.
//!
//! [`Dumps`] writes failed and refused reconciles of a running host the same way
//! (`weir run --dump-failures DIR`): the parent, children and related objects the plugin was
//! given, and for a refused answer the answer itself, expecting success, so that `weir test` on
//! the file shows the failure the cluster saw.

mod case;
mod dump;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, TypeMeta};
use kube::config::{Config, KubeConfigOptions, Kubeconfig};

pub use case::{Case, Expectation, Outcome, fixture_text};
pub use dump::Dumps;

use crate::answer::ValidationPolicy;
use crate::plugin::{Engine, EngineConfig, Limits, LoadError, Plugin, ResourceKind};
use crate::reconcile::failed::Failed;
use crate::reconcile::related::Related;
use crate::runtime::ObjectKey;

/// Why recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The plugin could not be loaded.
    #[error("cannot load {}", path.display())]
    Load {
        /// The component.
        path: PathBuf,
        /// The sandbox's error.
        #[source]
        source: LoadError,
    },
    /// The kubeconfig could not be read or used.
    #[error("cannot use the kubeconfig{}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Kubeconfig {
        /// The file, if one was given.
        path: Option<PathBuf>,
        /// What went wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// No cluster is configured.
    #[error("no Kubernetes cluster configured (use --kubeconfig PATH)")]
    NoCluster(#[source] kube::config::InferConfigError),
    /// The client could not be built.
    #[error("cannot build a Kubernetes client")]
    Client(#[source] kube::Error),
    /// Listing a kind failed.
    #[error("cannot list {kind}")]
    List {
        /// The kind.
        kind: String,
        /// The API's error.
        #[source]
        source: kube::Error,
    },
    /// The output directory exists and is not empty, or cannot be written.
    #[error("{}: {reason}", dir.display())]
    Output {
        /// The directory.
        dir: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
}

/// Arguments of `weir record`.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// The serving plugin's component (`.wasm`): its parents are recorded, its answers expected.
    #[arg(long)]
    pub plugin: PathBuf,
    /// Kubeconfig to use instead of KUBECONFIG, ~/.kube/config or the in-cluster config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current one).
    #[arg(long)]
    pub context: Option<String>,
    /// Record only this namespace's parents (default: all).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Keep the data of observed Secrets (by default it is left out, as the plugin never sees it).
    #[arg(long)]
    pub include_secret_data: bool,
    /// Where to write the fixtures (created; must be empty).
    pub out: PathBuf,
}

/// What was recorded.
#[derive(Debug, Default)]
pub struct Report {
    /// Fixture files written.
    pub written: usize,
    /// Of those, cases the plugin fails or the host refuses (recorded as such).
    pub failing: usize,
    /// Parents left out because they are being deleted.
    pub deleting: usize,
}

impl RecordArgs {
    /// Loads the plugin, connects, records; blocking (it owns its async runtime).
    pub fn execute(&self, engine: EngineConfig) -> Result<Report, RecordError> {
        let engine = Engine::new(engine).map_err(|source| RecordError::Load {
            path: self.plugin.clone(),
            source,
        })?;
        let plugin = engine
            .load_file(&self.plugin, Limits::default())
            .map_err(|source| RecordError::Load {
                path: self.plugin.clone(),
                source,
            })?;
        let runtime = tokio::runtime::Runtime::new().map_err(RecordError::Runtime)?;
        let cases = runtime.block_on(async {
            let client = self.client().await?;
            read(
                &client,
                &plugin,
                self.namespace.as_deref(),
                self.include_secret_data,
            )
            .await
        })?;
        let (cases, deleting): (Vec<Case>, Vec<Case>) = cases
            .into_iter()
            .partition(|c| c.parent.pointer("/metadata/deletionTimestamp").is_none());
        let mut report = write_all(&plugin, &cases, &self.out)?;
        report.deleting = deleting.len();
        Ok(report)
    }

    async fn client(&self) -> Result<Client, RecordError> {
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..KubeConfigOptions::default()
        };
        let kubeconfig_err = |source| RecordError::Kubeconfig {
            path: self.kubeconfig.clone(),
            source,
        };
        let config = match &self.kubeconfig {
            Some(path) => {
                let kc = Kubeconfig::read_from(path).map_err(kubeconfig_err)?;
                Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(kubeconfig_err)?
            }
            None if self.context.is_some() => Config::from_kubeconfig(&options)
                .await
                .map_err(kubeconfig_err)?,
            None => Config::infer().await.map_err(RecordError::NoCluster)?,
        };
        crate::client::build(config, crate::client::ClientLimits::default())
            .map_err(RecordError::Client)
    }
}

/// Every object of `kind` (in `namespace` if given), with its `apiVersion` and `kind` set (list
/// items may come without them) and without `managedFields`.
async fn list(
    client: &Client,
    kind: &ResourceKind,
    namespace: Option<&str>,
) -> Result<Vec<DynamicObject>, RecordError> {
    let resource = kind.api_resource();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) if kind.namespaced => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|source| RecordError::List {
            kind: kind.kind.clone(),
            source,
        })?;
    let types = TypeMeta {
        api_version: kind.api_version(),
        kind: kind.kind.clone(),
    };
    Ok(list
        .items
        .into_iter()
        .map(|mut o| {
            o.types.get_or_insert_with(|| types.clone());
            o.metadata.managed_fields = None;
            o
        })
        .collect())
}

/// The plugin's parents with the children each controls and the related objects each selects,
/// as the host would give them.
pub async fn read(
    client: &Client,
    plugin: &Plugin,
    namespace: Option<&str>,
    include_secret_data: bool,
) -> Result<Vec<Case>, RecordError> {
    let info = plugin.info();
    let parents = list(client, &info.parent, namespace).await?;
    let related = Selectable::list(client, plugin, namespace, include_secret_data).await?;
    let mut children: Vec<Arc<DynamicObject>> = Vec::new();
    for kind in &info.children {
        for child in list(client, kind, namespace).await? {
            let child = Arc::new(child);
            children.push(if include_secret_data {
                child
            } else {
                crate::answer::for_plugin(&child)
            });
        }
    }
    let mut cases: Vec<Case> = parents
        .iter()
        .map(|parent| {
            let uid = parent.metadata.uid.as_deref().unwrap_or_default();
            let observed: Vec<Arc<DynamicObject>> = children
                .iter()
                .filter(|c| {
                    c.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|r| r.controller == Some(true) && r.uid == uid && !uid.is_empty())
                })
                .cloned()
                .collect();
            Case::of(parent, &observed, &related.of(parent))
        })
        .collect();
    cases.sort_by_key(Case::key);
    Ok(cases)
}

/// The objects of a plugin's related kinds, listed once, that its parents select from.
struct Selectable<'a> {
    plugin: &'a Plugin,
    /// The listed objects in the host's stores, selected from by the host's own path.
    stores: Related,
    /// With `--include-secret-data`, the same objects as listed (with their Secrets' data), by
    /// kind and key; empty otherwise (the stores' redacted copies are what is recorded).
    listed: std::collections::HashMap<(String, String, ObjectKey), Arc<DynamicObject>>,
}

impl<'a> Selectable<'a> {
    async fn list(
        client: &Client,
        plugin: &'a Plugin,
        namespace: Option<&str>,
        keep_secrets: bool,
    ) -> Result<Selectable<'a>, RecordError> {
        let info = plugin.info();
        let mut objects = Vec::new();
        for kind in &info.related {
            objects.extend(list(client, kind, namespace).await?);
        }
        let listed = if keep_secrets {
            objects
                .iter()
                .map(|o| (identity(o), Arc::new(o.clone())))
                .collect()
        } else {
            std::collections::HashMap::new()
        };
        Ok(Selectable {
            plugin,
            stores: Related::offline(info, objects),
            listed,
        })
    }

    /// What `parent` selects and the cluster holds, Secrets redacted unless kept at listing.
    /// A failed or refused selection reads nothing: replaying the case fails the same way.
    fn of(&self, parent: &DynamicObject) -> Vec<Arc<DynamicObject>> {
        let info = self.plugin.info();
        if info.related.is_empty() {
            return Vec::new();
        }
        let text = serde_json::to_string(parent).unwrap_or_default();
        let Ok(selections) = self.plugin.select(&text) else {
            return Vec::new();
        };
        let key = crate::runtime::cache::key_of(parent);
        let found: Vec<Arc<DynamicObject>> = self
            .stores
            .select(info, &key, &selections)
            .unwrap_or_default()
            .home
            .iter()
            .filter_map(|o| o.decode().ok().map(Arc::new))
            .collect();
        if self.listed.is_empty() {
            return found;
        }
        found
            .into_iter()
            .map(|o| self.listed.get(&identity(&o)).cloned().unwrap_or(o))
            .collect()
    }
}

/// `(apiVersion, kind, key)` of a listed object.
fn identity(o: &DynamicObject) -> (String, String, ObjectKey) {
    let types = o.types.clone().unwrap_or_default();
    (
        types.api_version,
        types.kind,
        crate::runtime::cache::key_of(o),
    )
}

/// Runs `plugin` on every case and writes the fixtures into `dir` (created; must be empty).
pub fn write_all(plugin: &Plugin, cases: &[Case], dir: &Path) -> Result<Report, RecordError> {
    let output = |reason: String| RecordError::Output {
        dir: dir.to_owned(),
        reason,
    };
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir).map_err(|e| output(e.to_string()))?;
        if entries.next().is_some() {
            return Err(output(
                "not empty (recorded fixtures go to a new directory)".into(),
            ));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| output(e.to_string()))?;
    let info = plugin.info();
    let policy = ValidationPolicy::default();
    let mut report = Report::default();
    for case in cases {
        let outcome = case.run(plugin, &policy);
        let verdict = match &outcome {
            Outcome::Answer(_) => "its answer",
            Outcome::Failed(Failed::Error { .. }) => "its error",
            Outcome::Failed(Failed::Refused { .. }) => "the host's refusal of its answer",
        };
        if matches!(outcome, Outcome::Failed(_)) {
            report.failing += 1;
        }
        let description = format!(
            "{} {} as recorded, expecting {verdict} ({}@{})",
            info.parent.kind,
            case.key(),
            info.name,
            info.version
        );
        let text = fixture_text(info, &description, case, &outcome, Expectation::AsRecorded);
        case::write(dir, &case.file_name(), &text).map_err(|e| output(e.to_string()))?;
        report.written += 1;
    }
    Ok(report)
}
