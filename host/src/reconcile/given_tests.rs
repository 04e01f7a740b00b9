//! What a plugin is given: the JSON the cache keeps, byte for byte what the host gave before it
//! kept bytes (kube's `DynamicObject` written out again after the watch dropped managedFields),
//! over every object of the Blog plugin's fixtures, served as the emulator serves them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use kube::api::DynamicObject;
use kube::core::{TypeMeta, WatchEvent};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::invoke::{Invoker, PluginError, Reconciler};
use crate::metrics::Metrics;
use crate::plugin::{
    FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse, Requeue,
    ResourceKind,
};
use crate::runtime::cache::{CachedObject, Incoming, Packing};

/// Every object (parent, observed and related) of every Blog fixture.
fn fixture_objects() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/blog/fixtures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    let mut objects = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let fixture = crate::offline::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let all = std::iter::once(fixture.parent)
            .chain(fixture.observed)
            .chain(fixture.related);
        objects.extend(all.map(|o| (name.clone().unwrap_or_default(), o)));
    }
    assert!(objects.len() > 40, "the Blog fixtures were read");
    objects
}

/// The object as the API server serves it: with managedFields, compact, keys sorted (the
/// emulator's JSON).
fn served(object: &Value) -> String {
    let mut object = object.clone();
    object["metadata"]["managedFields"] = json!([{
        "apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubectl",
        "fieldsV1": {"f:metadata": {"f:labels": {}}}, "operation": "Apply",
    }]);
    object.to_string()
}

fn packing_of(object: &Value) -> Arc<Packing> {
    Arc::new(Packing::learning(TypeMeta {
        api_version: object["apiVersion"].as_str().unwrap_or_default().into(),
        kind: object["kind"].as_str().unwrap_or_default().into(),
    }))
}

/// What the host gave a plugin before: the served object decoded, managedFields dropped, written.
fn given_before(served: &str) -> String {
    let mut obj: DynamicObject = serde_json::from_str(served).unwrap_or_else(|e| panic!("{e}"));
    obj.metadata.managed_fields = None;
    serde_json::to_string(&obj).unwrap_or_else(|e| panic!("{e}"))
}

/// The served object cached as a watch line that names its `type` first (serde_json reads the
/// object directly) or its `object` first (serde buffers it, as for the emulator's lines).
fn cached(served: &str, packing: &Arc<Packing>, object_first: bool) -> Arc<CachedObject> {
    let line = if object_first {
        format!(r#"{{"object":{served},"type":"MODIFIED"}}"#)
    } else {
        format!(r#"{{"type":"MODIFIED","object":{served}}}"#)
    };
    match serde_json::from_str::<WatchEvent<Incoming>>(&line) {
        Ok(WatchEvent::Modified(incoming)) => Arc::new(CachedObject::new(incoming, packing)),
        other => panic!("{other:?}"),
    }
}

/// A native plugin that keeps the requests it was given.
struct Recording {
    info: PluginInfo,
    given: Mutex<Vec<ReconcileRequest>>,
}

impl Reconciler for Recording {
    fn info(&self) -> &PluginInfo {
        &self.info
    }
    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
        self.given
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(req.clone());
        Ok(ReconcileResponse {
            children: vec![],
            clusters: Vec::new(),
            status: None,
            requeue: Requeue::Done,
        })
    }
    fn finalize(&self, _: &FinalizeRequest) -> Result<FinalizeResponse, PluginError> {
        Ok(FinalizeResponse::complete())
    }
}

fn blog_kind() -> ResourceKind {
    ResourceKind {
        group: "weir.dev".into(),
        version: "v1alpha1".into(),
        kind: "Blog".into(),
        plural: "blogs".into(),
        namespaced: true,
    }
}

/// What the plugin is given for these cached objects (the first as the parent).
async fn given_now(objects: &[Arc<CachedObject>]) -> ReconcileRequest {
    let plugin = Arc::new(Recording {
        info: PluginInfo {
            name: "blog".into(),
            version: "0.1.0".into(),
            parent: blog_kind(),
            children: vec![],
            related: vec![],
            finalizer: None,
            crd: None,
        },
        given: Mutex::new(Vec::new()),
    });
    let invoker = Invoker::new(
        plugin.clone(),
        Arc::new(Semaphore::new(2)),
        Arc::new(Metrics::new()),
    );
    let (parent, rest) = objects.split_first().unwrap_or_else(|| panic!("a parent"));
    let (children, related) = rest.split_at(rest.len() / 2);
    invoker
        .reconcile(
            parent,
            children,
            &crate::reconcile::related::Found {
                home: related.to_vec(),
                elsewhere: Vec::new(),
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut given = plugin
        .given
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    given.pop().unwrap_or_else(|| panic!("one call"))
}

#[tokio::test]
async fn a_plugin_is_given_byte_for_byte_the_json_it_was_given_before_less_managed_fields() {
    for object_first in [false, true] {
        let objects = fixture_objects();
        // One packing per kind, as one store per kind: the objects after a kind's first are
        // packed against its dictionary.
        let mut packings: HashMap<String, Arc<Packing>> = HashMap::new();
        let cached: Vec<Arc<CachedObject>> = objects
            .iter()
            .map(|(_, o)| {
                let packing = packings
                    .entry(format!("{}/{}", o["apiVersion"], o["kind"]))
                    .or_insert_with(|| packing_of(o));
                cached(&served(o), packing, object_first)
            })
            .collect();
        let req = given_now(&cached).await;
        let given: Vec<&String> = std::iter::once(&req.parent)
            .chain(&req.children)
            .chain(&req.related)
            .collect();
        assert_eq!(given.len(), objects.len());
        for ((fixture, object), now) in objects.iter().zip(given) {
            assert_eq!(
                *now,
                given_before(&served(object)),
                "{fixture}: {} {}",
                object["kind"],
                object["metadata"]["name"]
            );
            assert!(!now.contains("managedFields"), "{fixture}");
        }
    }
}

#[test]
fn a_listed_object_without_its_types_is_given_as_the_watch_gave_it_before() {
    for (fixture, object) in fixture_objects() {
        let packing = packing_of(&object);
        let mut bare = object.clone();
        if let Some(fields) = bare.as_object_mut() {
            fields.remove("apiVersion");
            fields.remove("kind");
        }
        let incoming: Incoming =
            serde_json::from_str(&served(&bare)).unwrap_or_else(|e| panic!("{e}"));
        let now = CachedObject::new(incoming, &packing);
        // The watch filled in the kind's types before (source.rs), then wrote it out.
        let mut before: DynamicObject =
            serde_json::from_str(&served(&bare)).unwrap_or_else(|e| panic!("{e}"));
        before.types = Some(packing.types().clone());
        before.metadata.managed_fields = None;
        let before = serde_json::to_string(&before).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(now.json(), before, "{fixture}");
    }
}
