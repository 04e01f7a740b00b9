//! The table of served resource types: built-in kinds plus those registered by CRDs.

use std::sync::Arc;

use serde_json::Value;

use crate::kinds::events;

/// How a kind exposes the `/scale` subresource (JSON paths as in a CRD's `subresources.scale`).
#[derive(Clone, Debug)]
pub struct ScaleSpec {
    /// Path of the desired replica count, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// Path of the observed replica count, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// Path of the serialized label selector, if any.
    pub label_selector_path: Option<String>,
}

/// One served (group, version, resource) with everything discovery and the handlers need.
#[derive(Clone, Debug)]
pub struct ResourceType {
    /// API group, empty for the core group.
    pub group: String,
    /// API version served under this entry.
    pub version: String,
    /// Kind of the objects.
    pub kind: String,
    /// Plural resource name used in URLs.
    pub plural: String,
    /// Singular name (kubectl accepts it).
    pub singular: String,
    /// Short names such as `deploy`.
    pub short_names: Vec<String>,
    /// Categories such as `all`.
    pub categories: Vec<String>,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether writes to `status` go through `/status` only.
    pub has_status: bool,
    /// The `/scale` subresource, if served.
    pub scale: Option<ScaleSpec>,
    /// The CRD's `openAPIV3Schema` for this version, used for validation and pruning (shared:
    /// every request clones its resource type).
    pub schema: Option<Arc<Value>>,
    /// A CRD version's `additionalPrinterColumns`, for `Table` output.
    pub printer_columns: Arc<[Value]>,
    /// Whether this entry came from a CRD (and so disappears with it).
    pub from_crd: bool,
    /// The version objects are stored in (a CRD's `storage: true` version), whose
    /// group/version/kind discovery hashes into `storageVersionHash`.
    pub storage_version: String,
}

/// The version-independent identity of a resource: objects are stored once per group and plural.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResKey {
    /// API group.
    pub group: String,
    /// Plural name.
    pub plural: String,
}

impl ResourceType {
    /// `group/version`, or just `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage identity of this resource; events.k8s.io Events share the core Events' storage.
    pub fn key(&self) -> ResKey {
        if self.is_events_v1() {
            return ResKey {
                group: String::new(),
                plural: "events".into(),
            };
        }
        ResKey {
            group: self.group.clone(),
            plural: self.plural.clone(),
        }
    }

    /// Whether this is events.k8s.io's Event, stored as a core Event with fields renamed.
    pub fn is_events_v1(&self) -> bool {
        self.group == "events.k8s.io" && self.kind == "Event"
    }

    /// Whether objects stored under `key` are this resource's: [`ResourceType::key`] `== key`,
    /// without building a key (a watch asks this of every change the store makes).
    pub fn stores_at(&self, key: &ResKey) -> bool {
        if self.is_events_v1() {
            key.group.is_empty() && key.plural == "events"
        } else {
            key.group == self.group && key.plural == self.plural
        }
    }
}

/// Rewrite `apiVersion`/`kind` (and an Event's fields) to what the serving endpoint speaks.
pub fn serve(rt: &ResourceType, obj: &Value) -> Value {
    served(rt, obj.clone())
}

/// [`serve`] of an object the caller owns, changed in place instead of copied.
pub fn served(rt: &ResourceType, mut v: Value) -> Value {
    if rt.is_events_v1() {
        events::to_events_v1(&mut v);
    }
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(rt.api_version()));
        m.insert("kind".into(), Value::String(rt.kind.clone()));
    }
    v
}

/// An object as served by `rt` in the form it is stored in (the inverse of [`serve`]).
pub fn to_storage(rt: &ResourceType, mut obj: Value) -> Value {
    if rt.is_events_v1() {
        events::to_core_v1(&mut obj);
    }
    obj
}

fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        short_names: Vec::new(),
        categories: Vec::new(),
        namespaced,
        has_status: false,
        scale: None,
        schema: None,
        printer_columns: Arc::default(),
        from_crd: false,
        storage_version: version.into(),
    }
}

fn with_short(mut rt: ResourceType, names: &[&str]) -> ResourceType {
    rt.short_names = names.iter().map(|s| s.to_string()).collect();
    rt
}

fn with_status(mut rt: ResourceType) -> ResourceType {
    rt.has_status = true;
    rt
}

fn in_all(mut rt: ResourceType) -> ResourceType {
    rt.categories = vec!["all".into()];
    rt
}

fn replicas_scale(selector_path: &str) -> Option<ScaleSpec> {
    Some(ScaleSpec {
        spec_replicas_path: ".spec.replicas".into(),
        status_replicas_path: ".status.replicas".into(),
        label_selector_path: Some(selector_path.into()),
    })
}

/// The built-in kinds the emulator serves before any CRD exists, with the short names and
/// categories kube-apiserver gives them (`kubectl api-resources`).
pub fn builtins() -> Vec<ResourceType> {
    let mut deploy = in_all(with_status(with_short(
        builtin("apps", "v1", "Deployment", "deployments", true),
        &["deploy"],
    )));
    deploy.scale = replicas_scale(".status.selector");
    let mut rs = in_all(with_status(with_short(
        builtin("apps", "v1", "ReplicaSet", "replicasets", true),
        &["rs"],
    )));
    rs.scale = replicas_scale(".status.selector");
    let mut sts = in_all(with_status(with_short(
        builtin("apps", "v1", "StatefulSet", "statefulsets", true),
        &["sts"],
    )));
    sts.scale = replicas_scale(".status.selector");
    // Not simulated, but in kubectl's default `apply --prune` list, which needs every mapping.
    let mut rc = in_all(with_status(with_short(
        builtin(
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            true,
        ),
        &["rc"],
    )));
    rc.scale = replicas_scale(".status.selector");
    let mut crd = with_status(with_short(
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
        ),
        &["crd", "crds"],
    ));
    crd.categories = vec!["api-extensions".into()];
    // kube-apiserver's discovery still hashes the CRD's storage as apiextensions.k8s.io/v1beta1.
    crd.storage_version = "v1beta1".into();
    let mut endpoint_slices = builtin(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
    );
    // As with CRDs, kube-apiserver's discovery hashes EndpointSlices' storage as v1beta1.
    endpoint_slices.storage_version = "v1beta1".into();
    let rbac = "rbac.authorization.k8s.io";
    vec![
        with_status(with_short(
            builtin("", "v1", "Namespace", "namespaces", false),
            &["ns"],
        )),
        with_short(builtin("", "v1", "ConfigMap", "configmaps", true), &["cm"]),
        builtin("", "v1", "Secret", "secrets", true),
        in_all(with_status(with_short(
            builtin("", "v1", "Service", "services", true),
            &["svc"],
        ))),
        with_short(
            builtin("", "v1", "ServiceAccount", "serviceaccounts", true),
            &["sa"],
        ),
        with_short(builtin("", "v1", "Event", "events", true), &["ev"]),
        in_all(with_status(with_short(
            builtin("", "v1", "Pod", "pods", true),
            &["po"],
        ))),
        with_short(builtin("", "v1", "Endpoints", "endpoints", true), &["ep"]),
        with_status(with_short(
            builtin("", "v1", "PersistentVolume", "persistentvolumes", false),
            &["pv"],
        )),
        rc,
        with_status(with_short(
            builtin(
                "",
                "v1",
                "PersistentVolumeClaim",
                "persistentvolumeclaims",
                true,
            ),
            &["pvc"],
        )),
        with_short(
            builtin("events.k8s.io", "v1", "Event", "events", true),
            &["ev"],
        ),
        deploy,
        rs,
        sts,
        in_all(with_status(with_short(
            builtin("apps", "v1", "DaemonSet", "daemonsets", true),
            &["ds"],
        ))),
        in_all(with_status(builtin("batch", "v1", "Job", "jobs", true))),
        in_all(with_status(with_short(
            builtin("batch", "v1", "CronJob", "cronjobs", true),
            &["cj"],
        ))),
        endpoint_slices,
        with_status(with_short(
            builtin("networking.k8s.io", "v1", "Ingress", "ingresses", true),
            &["ing"],
        )),
        builtin(rbac, "v1", "Role", "roles", true),
        builtin(rbac, "v1", "RoleBinding", "rolebindings", true),
        builtin(rbac, "v1", "ClusterRole", "clusterroles", false),
        builtin(
            rbac,
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
        ),
        with_status(with_short(
            builtin(
                "policy",
                "v1",
                "PodDisruptionBudget",
                "poddisruptionbudgets",
                true,
            ),
            &["pdb"],
        )),
        builtin("coordination.k8s.io", "v1", "Lease", "leases", true),
        with_short(
            builtin(
                "scheduling.k8s.io",
                "v1",
                "PriorityClass",
                "priorityclasses",
                false,
            ),
            &["pc"],
        ),
        crd,
    ]
}

/// All served resource types, searchable by URL parts or by kind.
#[derive(Clone, Debug)]
pub struct Registry {
    types: Vec<ResourceType>,
}

impl Registry {
    /// A registry holding only the built-in kinds.
    pub fn new() -> Self {
        Registry { types: builtins() }
    }

    /// Every served entry, in registration order.
    pub fn all(&self) -> &[ResourceType] {
        &self.types
    }

    /// The entry served at `/{group}/{version}/{plural}`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// Replace every entry of a CRD-defined (group, plural) with new ones.
    pub fn set_crd_types(&mut self, key: &ResKey, types: Vec<ResourceType>) {
        self.remove_crd_types(key);
        self.types.extend(types);
    }

    /// Forget a CRD-defined (group, plural).
    pub fn remove_crd_types(&mut self, key: &ResKey) {
        self.types
            .retain(|t| !(t.from_crd && t.group == key.group && t.plural == key.plural));
    }

    /// Served groups in first-seen order with their versions (core group excluded).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    if !versions.contains(&t.version) {
                        versions.push(t.version.clone());
                    }
                }
                None => out.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        out
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}
