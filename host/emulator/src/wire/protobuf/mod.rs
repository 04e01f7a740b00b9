//! Protobuf bodies of the served built-in kinds, decoded with message descriptors into Kubernetes JSON.
//!
//! kubectl ≥ 1.32 sends protobuf from its generators (`create deployment|service|secret|...`) and
//! its self-reviews (`auth can-i`). The body is a `k8s\0`-prefixed `runtime.Unknown` envelope whose
//! `raw` is the object. Both are decoded as [`DynamicMessage`]s of `k8s.binpb`, a descriptor set
//! generated from k8s-pb's pinned bindings (`descriptors`, with the test that keeps it fresh);
//! `json` maps a message onto the JSON the API writes, and back for tests that send protobuf.

mod json;

#[cfg(test)]
mod descriptors;

use std::sync::OnceLock;

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value as Proto};
use serde_json::Value;

pub use json::Mismatch;

/// The `k8s\0` magic every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// The envelope of every body.
const UNKNOWN: &str = "k8s.io.apimachinery.pkg.runtime.Unknown";

/// A protobuf body the emulator cannot turn into JSON, or a JSON object it cannot encode.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The body lacks the `k8s\0` magic prefix of Kubernetes protobuf.
    #[error("protobuf body does not start with the k8s\\0 prefix")]
    NoPrefix,
    /// The bytes are not a well-formed message of the kind they claim.
    #[error("malformed protobuf body of kind {kind:?}")]
    Malformed {
        /// The kind named by the envelope.
        kind: String,
        /// The protobuf decoding error.
        #[source]
        source: prost::DecodeError,
    },
    /// The envelope's kind is not one whose descriptor the emulator has.
    #[error("protobuf bodies of kind {0:?} are not supported; send JSON (e.g. kubectl apply -f)")]
    UnsupportedKind(String),
    /// A JSON object does not fit its kind's message.
    #[error("cannot encode {kind} as protobuf")]
    Encode {
        /// The kind.
        kind: String,
        /// Which field does not fit.
        #[source]
        source: Mismatch,
    },
    /// The built-in descriptor set does not load (a broken `k8s.binpb`).
    #[error("the protobuf descriptors do not load")]
    Descriptors(#[source] prost_reflect::DescriptorError),
}

/// The descriptors of the served built-in kinds, loaded on first use.
fn pool() -> Result<&'static DescriptorPool, Error> {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    if let Some(pool) = POOL.get() {
        return Ok(pool);
    }
    let pool = DescriptorPool::decode(include_bytes!("k8s.binpb").as_slice())
        .map_err(Error::Descriptors)?;
    Ok(POOL.get_or_init(|| pool))
}

/// The message of `apiVersion`/`kind`: its package is `k8s.io.api.<group's first label>.<version>`
/// as the API's Go packages are laid out (`rbac.authorization.k8s.io/v1` is `api.rbac.v1`).
fn message_for(api_version: &str, kind: &str) -> Result<MessageDescriptor, Error> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let package = match group {
        "" => format!("k8s.io.api.core.{version}"),
        "apiextensions.k8s.io" => {
            format!("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.{version}")
        }
        g => format!("k8s.io.api.{}.{version}", g.split('.').next().unwrap_or(g)),
    };
    pool()?
        .get_message_by_name(&format!("{package}.{kind}"))
        .ok_or_else(|| Error::UnsupportedKind(kind.to_string()))
}

fn unknown() -> Result<MessageDescriptor, Error> {
    pool()?
        .get_message_by_name(UNKNOWN)
        .ok_or_else(|| Error::UnsupportedKind("Unknown".into()))
}

fn string_field(msg: &DynamicMessage, name: &str) -> String {
    msg.get_field_by_name(name)
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// Decode a `k8s\0`-enveloped protobuf body into the JSON object it carries.
pub fn decode(body: &[u8]) -> Result<Value, Error> {
    let inner = body.strip_prefix(MAGIC).ok_or(Error::NoPrefix)?;
    let malformed = |kind: &str| {
        let kind = kind.to_string();
        move |source| Error::Malformed { kind, source }
    };
    let envelope = DynamicMessage::decode(unknown()?, inner).map_err(malformed("Unknown"))?;
    let type_meta = match envelope.get_field_by_name("typeMeta").as_deref() {
        Some(Proto::Message(m)) => m.clone(),
        _ => return Err(Error::UnsupportedKind(String::new())),
    };
    let api_version = string_field(&type_meta, "apiVersion");
    let kind = string_field(&type_meta, "kind");
    let raw = envelope
        .get_field_by_name("raw")
        .and_then(|v| v.as_bytes().cloned())
        .unwrap_or_default();
    let desc = message_for(&api_version, &kind)?;
    let msg = DynamicMessage::decode(desc, raw).map_err(malformed(&kind))?;
    let mut obj = match json::to_json(&msg) {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    Ok(Value::Object(obj))
}

/// Encode a JSON object of a built-in kind as a `k8s\0`-enveloped protobuf body, as kubectl
/// sends one (for tests of [`decode`] through the real server).
pub fn encode(object: &Value) -> Result<Vec<u8>, Error> {
    let s = |k: &str| object[k].as_str().unwrap_or_default().to_string();
    let (api_version, kind) = (s("apiVersion"), s("kind"));
    let desc = message_for(&api_version, &kind)?;
    let mut fields = object.as_object().cloned().unwrap_or_default();
    fields.remove("apiVersion");
    fields.remove("kind");
    let msg =
        json::from_json(&desc, &Value::Object(fields), "").map_err(|source| Error::Encode {
            kind: kind.clone(),
            source,
        })?;
    let envelope = serde_json::json!({
        "typeMeta": {"apiVersion": api_version, "kind": kind},
        "contentEncoding": "",
        "contentType": "",
    });
    let mut unknown_msg =
        json::from_json(&unknown()?, &envelope, "").map_err(|source| Error::Encode {
            kind: "Unknown".into(),
            source,
        })?;
    unknown_msg.set_field_by_name("raw", Proto::Bytes(msg.encode_to_vec().into()));
    Ok([MAGIC, unknown_msg.encode_to_vec().as_slice()].concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::api::apps::v1 as apps;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    use serde_json::json;

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        [b"k8s\0".to_vec(), unknown.encode_to_vec()].concat()
    }

    fn meta(name: &str) -> Option<meta::ObjectMeta> {
        Some(meta::ObjectMeta {
            name: Some(name.into()),
            labels: [("app".to_string(), name.to_string())].into(),
            ..Default::default()
        })
    }

    #[test]
    fn a_deployment_decodes_with_json_names_and_int_or_string() {
        let d = apps::Deployment {
            metadata: meta("web"),
            spec: Some(apps::DeploymentSpec {
                replicas: Some(2),
                selector: Some(meta::LabelSelector {
                    match_labels: [("app".to_string(), "web".to_string())].into(),
                    ..Default::default()
                }),
                strategy: Some(apps::DeploymentStrategy {
                    r#type: Some("RollingUpdate".into()),
                    rolling_update: Some(apps::RollingUpdateDeployment {
                        max_unavailable: Some(IntOrString {
                            r#type: Some(1),
                            int_val: None,
                            str_val: Some("25%".into()),
                        }),
                        max_surge: Some(IntOrString {
                            r#type: Some(0),
                            int_val: Some(3),
                            str_val: None,
                        }),
                    }),
                }),
                template: Some(core::PodTemplateSpec {
                    metadata: meta("web"),
                    spec: Some(core::PodSpec {
                        containers: vec![core::Container {
                            name: Some("nginx".into()),
                            image: Some("nginx:1.27 \"quoted\"".into()),
                            ..Default::default()
                        }],
                        host_ipc: Some(true),
                        host_pid: Some(false),
                        security_context: Some(Default::default()),
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }),
            status: None,
        };
        let got = decode(&envelope("apps/v1", "Deployment", d.encode_to_vec())).unwrap();
        assert_eq!(
            got,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 3}},
                    "template": {"metadata": {"name": "web", "labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27 \"quoted\""}],
                                 "hostIPC": true, "securityContext": {}}}}})
        );
    }

    #[test]
    fn secret_bytes_become_base64_and_service_ports_keep_their_names() {
        let secret = core::Secret {
            metadata: meta("s"),
            data: [
                ("k".to_string(), b"hello".to_vec()),
                ("e".to_string(), Vec::new()),
            ]
            .into(),
            r#type: Some("Opaque".into()),
            ..Default::default()
        };
        let got = decode(&envelope("v1", "Secret", secret.encode_to_vec())).unwrap();
        assert_eq!(got["data"], json!({"k": "aGVsbG8=", "e": ""}));
        assert_eq!(got["type"], json!("Opaque"));

        let svc = core::Service {
            metadata: meta("svc"),
            spec: Some(core::ServiceSpec {
                ports: vec![core::ServicePort {
                    name: Some("80-8080".into()),
                    port: Some(80),
                    target_port: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(8080),
                        str_val: None,
                    }),
                    ..Default::default()
                }],
                cluster_ips: vec!["10.96.0.20".into()],
                r#type: Some("ClusterIP".into()),
                ..Default::default()
            }),
            status: None,
        };
        let got = decode(&envelope("v1", "Service", svc.encode_to_vec())).unwrap();
        assert_eq!(
            got["spec"],
            json!({"ports": [{"name": "80-8080", "port": 80, "targetPort": 8080}],
                   "clusterIPs": ["10.96.0.20"], "type": "ClusterIP"})
        );
    }

    #[test]
    fn an_unserved_kind_is_refused() {
        let node = core::Node::default();
        assert!(matches!(
            decode(&envelope("v1", "Node", node.encode_to_vec())),
            Err(Error::UnsupportedKind(k)) if k == "Node"
        ));
        assert!(matches!(decode(b"{}"), Err(Error::NoPrefix)));
    }

    #[test]
    fn a_zero_time_is_null_as_go_writes_it_and_a_set_one_is_rfc3339() {
        let mut cm = core::ConfigMap {
            metadata: meta("c"),
            ..Default::default()
        };
        if let Some(m) = cm.metadata.as_mut() {
            m.creation_timestamp = Some(meta::Time::default());
            m.deletion_timestamp = Some(meta::Time {
                seconds: Some(1_767_323_045),
                nanos: Some(0),
            });
        }
        let got = decode(&envelope("v1", "ConfigMap", cm.encode_to_vec())).unwrap();
        assert_eq!(got["metadata"]["creationTimestamp"], Value::Null, "{got}");
        assert!(got["metadata"].get("creationTimestamp").is_some(), "{got}");
        assert_eq!(
            got["metadata"]["deletionTimestamp"],
            json!("2026-01-02T03:04:05Z")
        );
    }

    #[test]
    fn a_crd_schema_round_trips_through_protobuf() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "size": {"type": "integer", "default": 3, "enum": [1, 3, 5]},
                        "port": {"x-kubernetes-int-or-string": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "closed": {"type": "object", "additionalProperties": false},
                        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                        "ref": {"$ref": "#/definitions/x"}}}}}]}});
        let body = encode(&crd).unwrap();
        assert_eq!(decode(&body).unwrap(), crd);
    }

    #[test]
    fn a_kind_whose_json_does_not_fit_its_message_is_not_encoded() {
        let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"k": 1}});
        assert!(
            matches!(encode(&bad), Err(Error::Encode { source, .. }) if source.path == "data.k")
        );
    }
}
