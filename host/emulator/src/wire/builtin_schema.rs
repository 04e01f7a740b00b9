//! The OpenAPI schemas of the served built-in kinds, generated once from k8s-openapi's `schemars` impls.
//!
//! One document serves three purposes: the names and types of fields when a protobuf body is turned
//! into JSON, strict field validation (`fieldValidation=Strict|Warn`), and `/openapi/v3` for
//! `kubectl explain`. Definitions are named as kube-apiserver names them
//! (`io.k8s.api.apps.v1.Deployment`) and referenced as `#/components/schemas/NAME`.

use std::sync::OnceLock;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Event, Namespace, PersistentVolume, PersistentVolumeClaim, Pod,
    ReplicationController, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::events::v1::Event as EventsEvent;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// Where `$ref`s point.
const REF_PREFIX: &str = "#/components/schemas/";

/// One served built-in kind and the name of its root definition.
#[derive(Debug)]
pub struct KindSchema {
    /// API group ("" for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Name of the root definition, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub definition: String,
}

/// Every definition reachable from the served built-in kinds.
#[derive(Debug)]
pub struct Schemas {
    /// Definitions by name, as in `components.schemas` of `/openapi/v3`.
    pub definitions: Map<String, Value>,
    /// The served kinds.
    pub kinds: Vec<KindSchema>,
}

fn add<T: schemars::JsonSchema + k8s_openapi::Resource>(
    generator: &mut SchemaGenerator,
    kinds: &mut Vec<KindSchema>,
) {
    let _ = generator.subschema_for::<T>();
    kinds.push(KindSchema {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        definition: T::schema_name().into_owned(),
    });
}

fn generate() -> Schemas {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut kinds = Vec::new();
    add::<Namespace>(&mut generator, &mut kinds);
    add::<ConfigMap>(&mut generator, &mut kinds);
    add::<Secret>(&mut generator, &mut kinds);
    add::<Service>(&mut generator, &mut kinds);
    add::<ServiceAccount>(&mut generator, &mut kinds);
    add::<Event>(&mut generator, &mut kinds);
    add::<EventsEvent>(&mut generator, &mut kinds);
    add::<Deployment>(&mut generator, &mut kinds);
    add::<ReplicaSet>(&mut generator, &mut kinds);
    add::<StatefulSet>(&mut generator, &mut kinds);
    add::<DaemonSet>(&mut generator, &mut kinds);
    add::<Pod>(&mut generator, &mut kinds);
    add::<Endpoints>(&mut generator, &mut kinds);
    add::<PersistentVolumeClaim>(&mut generator, &mut kinds);
    add::<PersistentVolume>(&mut generator, &mut kinds);
    add::<ReplicationController>(&mut generator, &mut kinds);
    add::<Job>(&mut generator, &mut kinds);
    add::<CronJob>(&mut generator, &mut kinds);
    add::<EndpointSlice>(&mut generator, &mut kinds);
    add::<Ingress>(&mut generator, &mut kinds);
    add::<Role>(&mut generator, &mut kinds);
    add::<RoleBinding>(&mut generator, &mut kinds);
    add::<ClusterRole>(&mut generator, &mut kinds);
    add::<ClusterRoleBinding>(&mut generator, &mut kinds);
    add::<PodDisruptionBudget>(&mut generator, &mut kinds);
    add::<Lease>(&mut generator, &mut kinds);
    add::<PriorityClass>(&mut generator, &mut kinds);
    add::<CustomResourceDefinition>(&mut generator, &mut kinds);
    let mut definitions = generator.take_definitions(true);
    // kubectl explain finds a kind's root definition by this extension, as kube-apiserver sets it.
    for k in &kinds {
        if let Some(def) = definitions
            .get_mut(&k.definition)
            .and_then(Value::as_object_mut)
        {
            def.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": k.group, "version": k.version, "kind": k.kind}]),
            );
        }
    }
    Schemas { definitions, kinds }
}

/// The schemas, generated on first use.
pub fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(generate)
}

impl Schemas {
    /// The root schema of a served built-in kind.
    pub fn for_kind(&self, group: &str, kind: &str) -> Option<&Value> {
        self.kinds
            .iter()
            .find(|k| k.group == group && k.kind == kind)
            .and_then(|k| self.definitions.get(&k.definition))
    }

    /// Follow `$ref` (also one wrapped in a single-element `allOf`) to the schema it names.
    pub fn resolve<'a>(&'a self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..8 {
            if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
                match r
                    .strip_prefix(REF_PREFIX)
                    .and_then(|n| self.definitions.get(n))
                {
                    Some(def) => schema = def,
                    None => return schema,
                }
            } else if let Some([only]) = schema
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                schema = only;
            } else {
                return schema;
            }
        }
        schema
    }

    /// The root definition's name of a served built-in kind.
    pub fn definition_name(&self, group: &str, kind: &str) -> Option<&str> {
        self.kinds
            .iter()
            .find(|k| k.group == group && k.kind == kind)
            .map(|k| k.definition.as_str())
    }

    /// The definition `name` and every definition it references, directly or not.
    pub fn closure(&self, name: &str) -> Map<String, Value> {
        let mut out = Map::new();
        let mut todo = vec![name.to_string()];
        while let Some(n) = todo.pop() {
            if out.contains_key(&n) {
                continue;
            }
            let Some(def) = self.definitions.get(&n) else {
                continue;
            };
            refs(def, &mut todo);
            out.insert(n, def.clone());
        }
        out
    }
}

/// Push the definition names `schema` references.
fn refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        if let Some(n) = r.strip_prefix(REF_PREFIX) {
                            out.push(n.to_string());
                        }
                    }
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}
