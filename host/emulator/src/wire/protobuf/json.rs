//! A decoded message as Kubernetes JSON, and back: JSON names, omitted zero values, and the API's
//! special types (`Time`, `IntOrString`, `Quantity`, `RawExtension`, ...) as JSON writes them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use prost::bytes::Bytes;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value,
};
use serde_json::{Map, Number, Value as Json};

/// A JSON value that does not fit the message it is encoded as.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct Mismatch {
    /// Where, as a JSON path (`spec.replicas`).
    pub path: String,
    /// What does not fit.
    pub reason: String,
}

fn mismatch(path: &str, reason: impl Into<String>) -> Mismatch {
    Mismatch {
        path: path.trim_start_matches('.').to_string(),
        reason: reason.into(),
    }
}

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
const EXTENSIONS: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1";

/// The messages JSON writes as something other than an object of their fields.
#[derive(Clone, Copy)]
enum Special {
    /// RFC 3339 seconds (`Time`) or microseconds (`MicroTime`).
    Time { micro: bool },
    /// A number or a string.
    IntOrString,
    /// A string (`Quantity`).
    Quantity,
    /// The raw JSON in field 1 (`RawExtension`, `FieldsV1`, apiextensions' `JSON`).
    Raw,
    /// A schema, or a bool (`JSONSchemaPropsOrBool`).
    SchemaOrBool,
    /// A schema, or an array of schemas (`...OrArray`) or of strings (`...OrStringArray`).
    SchemaOrArray,
}

fn special(desc: &MessageDescriptor) -> Option<Special> {
    // Compared case-blind: prost's bindings spell `JSON` as `Json`, and the descriptors keep that
    // spelling where no OpenAPI definition names the message.
    let (package, name) = desc.full_name().rsplit_once('.')?;
    let name = name.to_ascii_lowercase();
    Some(match (package, name.as_str()) {
        (META, "time") => Special::Time { micro: false },
        (META, "microtime") => Special::Time { micro: true },
        (META, "fieldsv1") => Special::Raw,
        ("k8s.io.apimachinery.pkg.util.intstr", "intorstring") => Special::IntOrString,
        ("k8s.io.apimachinery.pkg.api.resource", "quantity") => Special::Quantity,
        ("k8s.io.apimachinery.pkg.runtime", "rawextension") => Special::Raw,
        (EXTENSIONS, "json") => Special::Raw,
        (EXTENSIONS, "jsonschemapropsorbool") => Special::SchemaOrBool,
        (EXTENSIONS, "jsonschemapropsorarray" | "jsonschemapropsorstringarray") => {
            Special::SchemaOrArray
        }
        _ => return None,
    })
}

/// Pointer fields (`*int32`, `*bool`) of the served kinds whose explicit zero differs from
/// absent (`replicas: 0` against the default 1, `automountServiceAccountToken: false`). Go writes
/// every other field even at its zero value, which JSON's `omitempty` drops; the wire cannot tell
/// the two apart, so this list does.
const ZERO_IS_MEANINGFUL: &[&str] = &[
    "replicas",
    "revisionHistoryLimit",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "automountServiceAccountToken",
    "enableServiceLinks",
    "shareProcessNamespace",
    "hostUsers",
    "setHostnameAsFQDN",
    "immutable",
    "optional",
    "defaultMode",
    "mode",
    "runAsUser",
    "runAsGroup",
    "fsGroup",
    "runAsNonRoot",
    "privileged",
    "allowPrivilegeEscalation",
    "readOnlyRootFilesystem",
    "allocateLoadBalancerNodePorts",
    "leaseDurationSeconds",
    "leaseTransitions",
    "parallelism",
    "completions",
    "backoffLimit",
    "suspend",
    "ttlSecondsAfterFinished",
    "startingDeadlineSeconds",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    "progressDeadlineSeconds",
];

/// The JSON form of a message; `None` for one JSON writes as absent.
pub fn to_json(msg: &DynamicMessage) -> Option<Json> {
    if let Some(kind) = special(&msg.descriptor()) {
        return special_to_json(kind, msg);
    }
    let mut out = Map::new();
    for (field, value) in msg.fields() {
        let keep_zero = ZERO_IS_MEANINGFUL.contains(&field.json_name());
        match field_to_json(&field, value, keep_zero) {
            // An inlined message's fields are the parent's own.
            Some(Json::Object(inner)) if field.json_name().is_empty() => out.extend(inner),
            Some(v) => {
                out.insert(field.json_name().to_string(), v);
            }
            None => {}
        }
    }
    Some(Json::Object(out))
}

fn field_to_json(field: &FieldDescriptor, value: &Value, keep_zero: bool) -> Option<Json> {
    match value {
        // Protobuf cannot tell an empty list or map from an absent one; Go omits both.
        Value::List(items) if items.is_empty() => None,
        Value::Map(entries) if entries.is_empty() => None,
        Value::List(items) => Some(Json::Array(
            items
                .iter()
                .map(|v| value_to_json(v).unwrap_or(Json::Null))
                .collect(),
        )),
        Value::Map(entries) => {
            let mut out = Map::new();
            let mut sorted: Vec<_> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            for (k, v) in sorted {
                let key = match k {
                    MapKey::String(s) => s.clone(),
                    MapKey::Bool(b) => b.to_string(),
                    MapKey::I32(n) => n.to_string(),
                    MapKey::I64(n) => n.to_string(),
                    MapKey::U32(n) => n.to_string(),
                    MapKey::U64(n) => n.to_string(),
                };
                out.insert(key, value_to_json(v).unwrap_or(Json::Null));
            }
            Some(Json::Object(out))
        }
        v if !keep_zero
            && !matches!(field.kind(), Kind::Message(_))
            && v.is_default(&field.kind()) =>
        {
            None
        }
        v => value_to_json(v),
    }
}

fn value_to_json(value: &Value) -> Option<Json> {
    Some(match value {
        Value::Bool(b) => Json::Bool(*b),
        Value::I32(n) => Json::from(*n),
        Value::I64(n) => Json::from(*n),
        Value::U32(n) => Json::from(*n),
        Value::U64(n) => Json::from(*n),
        Value::F32(n) => Json::Number(Number::from_f64(f64::from(*n))?),
        Value::F64(n) => Json::Number(Number::from_f64(*n)?),
        Value::String(s) => Json::String(s.clone()),
        Value::Bytes(b) => Json::String(STANDARD.encode(b)),
        Value::EnumNumber(n) => Json::from(*n),
        Value::Message(m) => return to_json(m),
        Value::List(_) | Value::Map(_) => return None,
    })
}

/// Field `number` of `msg`, if it was sent.
fn get(msg: &DynamicMessage, number: u32) -> Option<Value> {
    msg.has_field_by_number(number)
        .then(|| msg.get_field_by_number(number).map(|v| v.into_owned()))
        .flatten()
}

fn special_to_json(kind: Special, msg: &DynamicMessage) -> Option<Json> {
    match kind {
        Special::Time { micro } => {
            // Go writes a zero Time as an empty message, and its JSON as null (a template's
            // `creationTimestamp: null`); an unset pointer is no message at all.
            let Some(seconds) = get(msg, 1).and_then(|v| v.as_i64()) else {
                return Some(Json::Null);
            };
            let nanos = if micro {
                get(msg, 2).and_then(|v| v.as_i32()).unwrap_or(0)
            } else {
                0
            };
            let t = k8s_openapi::jiff::Timestamp::new(seconds, nanos).ok()?;
            let format = if micro {
                "%Y-%m-%dT%H:%M:%S.%6fZ"
            } else {
                "%Y-%m-%dT%H:%M:%SZ"
            };
            Some(Json::String(t.strftime(format).to_string()))
        }
        Special::IntOrString => {
            if get(msg, 1).and_then(|v| v.as_i64()) == Some(1) {
                Some(Json::String(
                    get(msg, 3)
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                ))
            } else {
                Some(Json::from(
                    get(msg, 2).and_then(|v| v.as_i32()).unwrap_or(0),
                ))
            }
        }
        Special::Quantity => get(msg, 1).and_then(|v| v.as_str().map(|s| Json::String(s.into()))),
        Special::Raw => get(msg, 1)
            .and_then(|v| v.as_bytes().cloned())
            .and_then(|b| serde_json::from_slice(&b).ok()),
        Special::SchemaOrBool => match get(msg, 2) {
            Some(Value::Message(schema)) => to_json(&schema),
            _ => Some(Json::Bool(
                get(msg, 1).and_then(|v| v.as_bool()) == Some(true),
            )),
        },
        Special::SchemaOrArray => match (get(msg, 1), get(msg, 2)) {
            (Some(Value::Message(schema)), _) => to_json(&schema),
            (_, Some(Value::List(items))) => Some(Json::Array(
                items.iter().filter_map(value_to_json).collect(),
            )),
            _ => None,
        },
    }
}

/// The message of type `desc` that `json` describes.
pub fn from_json(
    desc: &MessageDescriptor,
    json: &Json,
    path: &str,
) -> Result<DynamicMessage, Mismatch> {
    let mut msg = DynamicMessage::new(desc.clone());
    if let Some(kind) = special(desc) {
        special_from_json(kind, &mut msg, json, path)?;
        return Ok(msg);
    }
    let Json::Object(fields) = json else {
        return Err(mismatch(
            path,
            format!("expected an object for {}", desc.name()),
        ));
    };
    // The field whose message's fields JSON writes inline, with what goes into it.
    let inline = desc.fields().find(|f| f.json_name().is_empty());
    let mut inlined = Map::new();
    for (name, v) in fields {
        let at = format!("{path}.{name}");
        if v.is_null() {
            continue;
        }
        let Some(field) = desc.get_field_by_json_name(name) else {
            if let Some(Kind::Message(m)) = inline.as_ref().map(FieldDescriptor::kind)
                && m.get_field_by_json_name(name).is_some()
            {
                inlined.insert(name.clone(), v.clone());
                continue;
            }
            return Err(mismatch(&at, format!("{} has no such field", desc.name())));
        };
        let value = if field.is_map() {
            let Kind::Message(entry) = field.kind() else {
                return Err(mismatch(&at, "a map field without an entry type"));
            };
            let value_field = entry.map_entry_value_field();
            let Json::Object(entries) = v else {
                return Err(mismatch(&at, "expected an object"));
            };
            let mut map = std::collections::HashMap::new();
            for (k, v) in entries {
                let item = scalar_from_json(&value_field.kind(), v, &format!("{at}.{k}"))?;
                map.insert(MapKey::String(k.clone()), item);
            }
            Value::Map(map)
        } else if field.is_list() {
            let Json::Array(items) = v else {
                return Err(mismatch(&at, "expected an array"));
            };
            let items = items
                .iter()
                .enumerate()
                .map(|(i, item)| scalar_from_json(&field.kind(), item, &format!("{at}[{i}]")))
                .collect::<Result<_, _>>()?;
            Value::List(items)
        } else {
            scalar_from_json(&field.kind(), v, &at)?
        };
        msg.set_field(&field, value);
    }
    if let Some(field) = inline.filter(|_| !inlined.is_empty()) {
        let value = scalar_from_json(&field.kind(), &Json::Object(inlined), path)?;
        msg.set_field(&field, value);
    }
    Ok(msg)
}

fn scalar_from_json(kind: &Kind, json: &Json, path: &str) -> Result<Value, Mismatch> {
    let wrong = || mismatch(path, format!("expected a {kind:?}"));
    Ok(match kind {
        Kind::Message(desc) => Value::Message(from_json(desc, json, path)?),
        Kind::String => Value::String(json.as_str().ok_or_else(wrong)?.to_string()),
        Kind::Bool => Value::Bool(json.as_bool().ok_or_else(wrong)?),
        Kind::Int32 => Value::I32(
            json.as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(wrong)?,
        ),
        Kind::Int64 => Value::I64(json.as_i64().ok_or_else(wrong)?),
        Kind::Double => Value::F64(json.as_f64().ok_or_else(wrong)?),
        Kind::Bytes => Value::Bytes(Bytes::from(
            STANDARD
                .decode(json.as_str().ok_or_else(wrong)?)
                .map_err(|e| mismatch(path, e.to_string()))?,
        )),
        other => {
            return Err(mismatch(
                path,
                format!("{other:?} fields are not used by the API"),
            ));
        }
    })
}

fn special_from_json(
    kind: Special,
    msg: &mut DynamicMessage,
    json: &Json,
    path: &str,
) -> Result<(), Mismatch> {
    let desc = msg.descriptor();
    let field = |n: u32| {
        desc.get_field(n)
            .ok_or_else(|| mismatch(path, format!("{} has no field {n}", desc.name())))
    };
    match (kind, json) {
        (Special::Time { micro }, Json::String(s)) => {
            let t: k8s_openapi::jiff::Timestamp =
                s.parse().map_err(|e| mismatch(path, format!("{e}")))?;
            msg.set_field(&field(1)?, Value::I64(t.as_second()));
            if micro {
                msg.set_field(&field(2)?, Value::I32(t.subsec_nanosecond()));
            }
        }
        (Special::IntOrString, Json::Number(n)) => {
            let n = n
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| mismatch(path, "not a 32-bit integer"))?;
            msg.set_field(&field(1)?, Value::I64(0));
            msg.set_field(&field(2)?, Value::I32(n));
        }
        (Special::IntOrString, Json::String(s)) => {
            msg.set_field(&field(1)?, Value::I64(1));
            msg.set_field(&field(3)?, Value::String(s.clone()));
        }
        (Special::Quantity, Json::String(s)) => msg.set_field(&field(1)?, Value::String(s.clone())),
        (Special::Quantity, Json::Number(n)) => {
            msg.set_field(&field(1)?, Value::String(n.to_string()))
        }
        (Special::Raw, v) => msg.set_field(
            &field(1)?,
            Value::Bytes(Bytes::from(
                serde_json::to_vec(v).map_err(|e| mismatch(path, e.to_string()))?,
            )),
        ),
        (Special::SchemaOrBool, Json::Bool(b)) => msg.set_field(&field(1)?, Value::Bool(*b)),
        (Special::SchemaOrBool | Special::SchemaOrArray, Json::Object(_)) => {
            let f = field(if matches!(kind, Special::SchemaOrBool) {
                2
            } else {
                1
            })?;
            let Kind::Message(schema) = f.kind() else {
                return Err(mismatch(path, "the schema field is not a message"));
            };
            msg.set_field(&f, Value::Message(from_json(&schema, json, path)?));
        }
        (Special::SchemaOrArray, Json::Array(items)) => {
            let f = field(2)?;
            let items = items
                .iter()
                .enumerate()
                .map(|(i, item)| scalar_from_json(&f.kind(), item, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?;
            msg.set_field(&f, Value::List(items));
        }
        _ => {
            return Err(mismatch(
                path,
                format!("unexpected JSON for {}", desc.name()),
            ));
        }
    }
    Ok(())
}
