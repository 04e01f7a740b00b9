//! Protobuf request bodies of the served built-in kinds, decoded with `k8s-pb` and turned into JSON.
//!
//! kubectl ≥ 1.32 sends protobuf from its generators (`create deployment|service|secret|...`).
//! The body is a `k8s\0`-prefixed `runtime.Unknown` envelope whose `raw` is the object; `k8s-pb`
//! decodes both. Its generated types carry no serde and no field reflection, so the JSON is built
//! from the one description of a message prost generates, its `Debug` output (field names in
//! declaration order, `Some`/`None` for presence), read back by a small parser and mapped onto the
//! kind's OpenAPI schema from [`crate::builtin_schema`]: the schema gives the JSON name of each
//! field (`host_ipc` is `hostIPC`), which strings are base64 bytes, and where the API's special
//! types (`Time`, `IntOrString`, `Quantity`, `RawExtension`) sit. k8s-pb is pinned, and the unit
//! tests below pin the shape of that output.

use prost::Message;
use serde_json::{Map, Number, Value};

use crate::builtin_schema::{Schemas, schemas};

/// A protobuf body the emulator cannot turn into JSON.
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
    /// The envelope's kind is not a served built-in kind.
    #[error("protobuf bodies of kind {0:?} are not supported; send JSON (e.g. kubectl apply -f)")]
    UnsupportedKind(String),
    /// The decoded message's description could not be read back (a k8s-pb upgrade changed it).
    #[error("could not convert the protobuf {kind} to JSON at byte {at} of its description")]
    Convert {
        /// The kind.
        kind: String,
        /// Offset into the `Debug` text.
        at: usize,
    },
}

/// Decode `raw` as the k8s-pb message `$ty` and return its `Debug` description.
macro_rules! describe {
    ($ty:ty, $raw:expr, $kind:expr) => {
        <$ty>::decode($raw)
            .map(|m| format!("{m:?}"))
            .map_err(|source| Error::Malformed {
                kind: $kind.to_string(),
                source,
            })
    };
}

/// Decode a `k8s\0`-enveloped protobuf body into the JSON object it carries.
pub fn decode(body: &[u8]) -> Result<Value, Error> {
    use k8s_pb::api::{
        apps, batch, coordination, core, discovery, events, networking, policy, rbac, scheduling,
    };
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions;
    let inner = body.strip_prefix(b"k8s\0").ok_or(Error::NoPrefix)?;
    let envelope =
        k8s_pb::apimachinery::pkg::runtime::Unknown::decode(inner).map_err(|source| {
            Error::Malformed {
                kind: "Unknown".into(),
                source,
            }
        })?;
    let type_meta = envelope.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let raw = envelope.raw.unwrap_or_default();
    let raw = raw.as_slice();
    let text = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Namespace") => describe!(core::v1::Namespace, raw, kind)?,
        ("v1", "ConfigMap") => describe!(core::v1::ConfigMap, raw, kind)?,
        ("v1", "Secret") => describe!(core::v1::Secret, raw, kind)?,
        ("v1", "Service") => describe!(core::v1::Service, raw, kind)?,
        ("v1", "ServiceAccount") => describe!(core::v1::ServiceAccount, raw, kind)?,
        ("v1", "Event") => describe!(core::v1::Event, raw, kind)?,
        ("events.k8s.io/v1", "Event") => describe!(events::v1::Event, raw, kind)?,
        ("apps/v1", "Deployment") => describe!(apps::v1::Deployment, raw, kind)?,
        ("apps/v1", "ReplicaSet") => describe!(apps::v1::ReplicaSet, raw, kind)?,
        ("apps/v1", "StatefulSet") => describe!(apps::v1::StatefulSet, raw, kind)?,
        ("apps/v1", "DaemonSet") => describe!(apps::v1::DaemonSet, raw, kind)?,
        ("v1", "Pod") => describe!(core::v1::Pod, raw, kind)?,
        ("v1", "Endpoints") => describe!(core::v1::Endpoints, raw, kind)?,
        ("v1", "PersistentVolume") => describe!(core::v1::PersistentVolume, raw, kind)?,
        ("v1", "ReplicationController") => describe!(core::v1::ReplicationController, raw, kind)?,
        ("v1", "PersistentVolumeClaim") => describe!(core::v1::PersistentVolumeClaim, raw, kind)?,
        ("batch/v1", "Job") => describe!(batch::v1::Job, raw, kind)?,
        ("batch/v1", "CronJob") => describe!(batch::v1::CronJob, raw, kind)?,
        ("discovery.k8s.io/v1", "EndpointSlice") => {
            describe!(discovery::v1::EndpointSlice, raw, kind)?
        }
        ("networking.k8s.io/v1", "Ingress") => describe!(networking::v1::Ingress, raw, kind)?,
        ("rbac.authorization.k8s.io/v1", "Role") => describe!(rbac::v1::Role, raw, kind)?,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => {
            describe!(rbac::v1::RoleBinding, raw, kind)?
        }
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => {
            describe!(rbac::v1::ClusterRole, raw, kind)?
        }
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            describe!(rbac::v1::ClusterRoleBinding, raw, kind)?
        }
        ("policy/v1", "PodDisruptionBudget") => {
            describe!(policy::v1::PodDisruptionBudget, raw, kind)?
        }
        ("coordination.k8s.io/v1", "Lease") => describe!(coordination::v1::Lease, raw, kind)?,
        ("scheduling.k8s.io/v1", "PriorityClass") => {
            describe!(scheduling::v1::PriorityClass, raw, kind)?
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            describe!(apiextensions::v1::CustomResourceDefinition, raw, kind)?
        }
        _ => return Err(Error::UnsupportedKind(kind)),
    };
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let s = schemas();
    let root = s
        .for_kind(group, &kind)
        .ok_or_else(|| Error::UnsupportedKind(kind.clone()))?;
    let node = Parser::new(&text).document().map_err(|at| Error::Convert {
        kind: kind.clone(),
        at,
    })?;
    let mut obj = match to_json(s, root, node) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    Ok(Value::Object(obj))
}

/// A value as Rust's `Debug` prints it.
#[derive(Debug, PartialEq)]
enum Node {
    /// `None`.
    Absent,
    Bool(bool),
    Number(Number),
    Str(String),
    /// `[a, b]` (repeated fields and `bytes`).
    List(Vec<Node>),
    /// `{k: v}` (protobuf maps).
    Map(Vec<(Node, Node)>),
    /// `Name { field: value }` (messages).
    Message(String, Vec<(String, Node)>),
}

/// A recursive-descent reader of `Debug` text; errors are byte offsets.
struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Self {
        Parser { s, pos: 0 }
    }

    fn document(mut self) -> Result<Node, usize> {
        let node = self.value()?;
        self.ws();
        if self.pos == self.s.len() {
            Ok(node)
        } else {
            Err(self.pos)
        }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.s.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), usize> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.pos)
        }
    }

    fn ident(&mut self) -> Result<&'a str, usize> {
        self.ws();
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '#'))
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(self.pos);
        }
        self.pos += len;
        Ok(&rest[..len])
    }

    /// `open item (, item)* close`, tolerating the empty form.
    fn items<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, usize>,
    ) -> Result<Vec<T>, usize> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat(close) {
                return Ok(out);
            }
            self.expect(",")?;
        }
    }

    fn value(&mut self) -> Result<Node, usize> {
        self.ws();
        let c = self.rest().chars().next().ok_or(self.pos)?;
        match c {
            '"' => self.string().map(Node::Str),
            '[' => {
                self.pos += 1;
                self.items("]", Self::value).map(Node::List)
            }
            '{' => {
                self.pos += 1;
                self.items("}", |p| {
                    let k = p.value()?;
                    p.expect(":")?;
                    Ok((k, p.value()?))
                })
                .map(Node::Map)
            }
            '-' | '0'..='9' => self.number(),
            _ => {
                let word = self.ident()?;
                match word {
                    "None" => Ok(Node::Absent),
                    "true" => Ok(Node::Bool(true)),
                    "false" => Ok(Node::Bool(false)),
                    "Some" => {
                        self.expect("(")?;
                        let v = self.value()?;
                        self.expect(")")?;
                        Ok(v)
                    }
                    name if self.eat("{") => {
                        let fields = self.items("}", |p| {
                            let f = p.ident()?.trim_start_matches("r#").to_string();
                            p.expect(":")?;
                            Ok((f, p.value()?))
                        })?;
                        Ok(Node::Message(name.to_string(), fields))
                    }
                    // A message without fields prints as its bare name.
                    name => Ok(Node::Message(name.to_string(), Vec::new())),
                }
            }
        }
    }

    fn number(&mut self) -> Result<Node, usize> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
            .unwrap_or(rest.len());
        let text = &rest[..len];
        let n = text
            .parse::<i64>()
            .map(Number::from)
            .ok()
            .or_else(|| text.parse::<f64>().ok().and_then(Number::from_f64))
            .ok_or(self.pos)?;
        self.pos += len;
        Ok(Node::Number(n))
    }

    /// A string literal with Rust's escapes (`\"`, `\\`, `\n`, `\t`, `\r`, `\0`, `\'`, `\u{..}`).
    fn string(&mut self) -> Result<String, usize> {
        let start = self.pos;
        let mut out = String::new();
        let mut chars = self.rest().char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => {
                    let (_, e) = chars.next().ok_or(start)?;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '0' => out.push('\0'),
                        'u' => {
                            let mut hex = String::new();
                            for (_, h) in chars.by_ref() {
                                match h {
                                    '{' => {}
                                    '}' => break,
                                    h => hex.push(h),
                                }
                            }
                            let ch = u32::from_str_radix(&hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .ok_or(start)?;
                            out.push(ch);
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
        Err(start)
    }
}

/// Letters and digits only, lower-cased: `host_ipc`, `hostIPC` and `$ref`/`ref` meet here.
fn normalized(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The fallback JSON name when the schema has no matching property.
fn camel(name: &str) -> String {
    let mut out = String::new();
    for (i, part) in name.split('_').enumerate() {
        let mut cs = part.chars();
        match cs.next() {
            Some(first) if i > 0 => {
                out.push(first.to_ascii_uppercase());
                out.extend(cs);
            }
            _ => out.push_str(part),
        }
    }
    out
}

/// Pointer fields (`*int32`, `*bool`) of the served kinds whose explicit zero differs from
/// absent (e.g. `replicas: 0` against the default 1, `automountServiceAccountToken: false`).
const ZERO_IS_MEANINGFUL: &[&str] = &[
    "replicas",
    "revision_history_limit",
    "termination_grace_period_seconds",
    "active_deadline_seconds",
    "automount_service_account_token",
    "enable_service_links",
    "share_process_namespace",
    "host_users",
    "set_hostname_as_fqdn",
    "immutable",
    "optional",
    "default_mode",
    "mode",
    "run_as_user",
    "run_as_group",
    "fs_group",
    "run_as_non_root",
    "privileged",
    "allow_privilege_escalation",
    "read_only_root_filesystem",
    "allocate_load_balancer_node_ports",
    "lease_duration_seconds",
    "lease_transitions",
];

fn field<'a>(fields: &'a [(String, Node)], name: &str) -> Option<&'a Node> {
    fields.iter().find(|(f, _)| f == name).map(|(_, v)| v)
}

fn bytes(items: &[Node]) -> Vec<u8> {
    items
        .iter()
        .filter_map(|n| match n {
            Node::Number(x) => x.as_u64().and_then(|b| u8::try_from(b).ok()),
            _ => None,
        })
        .collect()
}

fn timestamp(fields: &[(String, Node)], micro: bool) -> Option<Value> {
    let num = |name| match field(fields, name) {
        Some(Node::Number(n)) => n.as_i64(),
        _ => None,
    };
    let nanos = i32::try_from(num("nanos").unwrap_or(0)).ok()?;
    let t = k8s_openapi::jiff::Timestamp::new(num("seconds").unwrap_or(0), nanos).ok()?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S.%6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Some(Value::String(t.strftime(format).to_string()))
}

/// The JSON form of the API's special messages, which JSON writes as scalars or raw JSON.
fn special(name: &str, fields: &[(String, Node)]) -> Option<Option<Value>> {
    let raw_json = || match field(fields, "raw") {
        Some(Node::List(items)) => serde_json::from_slice(&bytes(items)).ok(),
        _ => None,
    };
    Some(match name {
        "Time" => timestamp(fields, false),
        "MicroTime" => timestamp(fields, true),
        "IntOrString" => match field(fields, "type") {
            Some(Node::Number(t)) if t.as_i64() == Some(1) => {
                Some(Value::String(match field(fields, "str_val") {
                    Some(Node::Str(s)) => s.clone(),
                    _ => String::new(),
                }))
            }
            _ => Some(match field(fields, "int_val") {
                Some(Node::Number(n)) => Value::Number(n.clone()),
                _ => Value::from(0),
            }),
        },
        "Quantity" => match field(fields, "string") {
            Some(Node::Str(s)) => Some(Value::String(s.clone())),
            _ => None,
        },
        "RawExtension" | "Json" | "FieldsV1" => raw_json(),
        "JsonSchemaPropsOrBool" => match field(fields, "schema") {
            Some(Node::Message(..)) => return None,
            _ => Some(Value::Bool(matches!(
                field(fields, "allows"),
                Some(Node::Bool(true))
            ))),
        },
        _ => return None,
    })
}

/// Convert one node under `schema`; `None` means the field is absent.
fn to_json(s: &Schemas, schema: &Value, node: Node) -> Option<Value> {
    let schema = s.resolve(schema);
    match node {
        Node::Absent => None,
        Node::Bool(b) => Some(Value::Bool(b)),
        Node::Number(n) => Some(Value::Number(n)),
        Node::Str(x) => Some(Value::String(x)),
        Node::List(items) if schema.get("format").and_then(Value::as_str) == Some("byte") => {
            Some(Value::String(base64(&bytes(&items))))
        }
        Node::List(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Null);
            Some(Value::Array(
                items
                    .into_iter()
                    .filter_map(|n| to_json(s, item_schema, n))
                    .collect(),
            ))
        }
        Node::Map(entries) => {
            let value_schema = schema.get("additionalProperties").unwrap_or(&Value::Null);
            let mut out = Map::new();
            for (k, v) in entries {
                let key = match k {
                    Node::Str(k) => k,
                    other => format!("{other:?}"),
                };
                let v = to_json(s, value_schema, v).unwrap_or(Value::Null);
                out.insert(key, v);
            }
            Some(Value::Object(out))
        }
        Node::Message(name, fields) => {
            if let Some(v) = special(&name, &fields) {
                return v;
            }
            let props = schema.get("properties").and_then(Value::as_object);
            let mut out = Map::new();
            for (f, v) in fields {
                // Protobuf cannot tell an empty repeated field or map from an absent one; Go omits both.
                if matches!(&v, Node::List(l) if l.is_empty())
                    || matches!(&v, Node::Map(m) if m.is_empty())
                {
                    continue;
                }
                // Go writes every non-pointer field, so zero values arrive for fields the sender
                // never set; JSON's `omitempty` drops them. Pointer fields keep an explicit zero.
                let zero = match &v {
                    Node::Str(x) => x.is_empty(),
                    Node::Bool(b) => !b,
                    Node::Number(n) => n.as_f64() == Some(0.0),
                    _ => false,
                };
                if zero && !ZERO_IS_MEANINGFUL.contains(&f.as_str()) {
                    continue;
                }
                let wanted = normalized(&f);
                let (json_name, sub) = props
                    .and_then(|p| p.iter().find(|(k, _)| normalized(k) == wanted))
                    .map(|(k, sub)| (k.clone(), sub))
                    .unwrap_or_else(|| (camel(&f), &Value::Null));
                if let Some(v) = to_json(s, sub, v) {
                    out.insert(json_name, v);
                }
            }
            Some(Value::Object(out))
        }
    }
}

fn base64(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
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
}
