//! The protobuf form of `/openapi/v2` that client-go reads: gnostic's `openapi.v2.Document`.
//!
//! client-go's `OpenAPISchema()` asks for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
//! and decodes the answer as protobuf only (a JSON answer fails to parse), so kubectl 1.27 and
//! 1.28 need this encoding. The messages and field numbers are those of gnostic's
//! `openapiv2/OpenAPIv2.proto`; only what the v2 document holds is written. Values that are free
//! JSON in the document (`default`, `enum`, `example`, every `x-` extension) travel as gnostic's
//! `Any` with the value's text in its `yaml` field: JSON is YAML, and kube-openapi reads them with
//! a YAML parser.

use prost::encoding::{WireType, encode_key, encode_varint};
use serde_json::{Map, Value};

/// The MIME type client-go asks for, and the one kube-apiserver answers with.
pub const CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// A protobuf message being written, field by field.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn len_delimited(&mut self, field: u32, bytes: &[u8]) {
        encode_key(field, WireType::LengthDelimited, &mut self.0);
        encode_varint(bytes.len() as u64, &mut self.0);
        self.0.extend_from_slice(bytes);
    }

    fn message(&mut self, field: u32, m: Message) {
        self.len_delimited(field, &m.0);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.len_delimited(field, s.as_bytes());
        }
    }

    fn strings(&mut self, field: u32, v: Option<&Value>) {
        match v {
            Some(Value::String(s)) => self.len_delimited(field, s.as_bytes()),
            Some(Value::Array(items)) => {
                for s in items.iter().filter_map(Value::as_str) {
                    self.len_delimited(field, s.as_bytes());
                }
            }
            _ => {}
        }
    }

    fn boolean(&mut self, field: u32, v: Option<&Value>) {
        if v.and_then(Value::as_bool) == Some(true) {
            encode_key(field, WireType::Varint, &mut self.0);
            encode_varint(1, &mut self.0);
        }
    }

    fn double(&mut self, field: u32, v: Option<&Value>) {
        if let Some(f) = v.and_then(Value::as_f64).filter(|f| *f != 0.0) {
            encode_key(field, WireType::SixtyFourBit, &mut self.0);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }

    fn int64(&mut self, field: u32, v: Option<&Value>) {
        if let Some(i) = v.and_then(Value::as_i64).filter(|i| *i != 0) {
            encode_key(field, WireType::Varint, &mut self.0);
            encode_varint(i as u64, &mut self.0);
        }
    }

    /// gnostic's `Any { yaml = 2 }` holding `v`'s text.
    fn any(&mut self, field: u32, v: &Value) {
        let mut any = Message::default();
        any.string(2, &v.to_string());
        self.message(field, any);
    }

    /// `repeated NamedAny vendor_extension`: every `x-` key of `o`.
    fn extensions(&mut self, field: u32, o: &Map<String, Value>) {
        for (k, v) in o.iter().filter(|(k, _)| k.starts_with("x-")) {
            let mut named = Message::default();
            named.string(1, k);
            named.any(2, v);
            self.message(field, named);
        }
    }

    /// A `repeated Named<T>` map entry: `name = 1`, `value = 2`.
    fn named(&mut self, field: u32, name: &str, value: Message) {
        let mut named = Message::default();
        named.string(1, name);
        named.message(2, value);
        self.message(field, named);
    }
}

/// `openapi.v2.Schema`.
fn schema(s: &Value) -> Message {
    let mut m = Message::default();
    let Some(o) = s.as_object() else { return m };
    m.string(1, o.get("$ref").and_then(Value::as_str).unwrap_or(""));
    for (field, key) in [
        (2, "format"),
        (3, "title"),
        (4, "description"),
        (13, "pattern"),
    ] {
        m.string(field, o.get(key).and_then(Value::as_str).unwrap_or(""));
    }
    if let Some(d) = o.get("default") {
        m.any(5, d);
    }
    for (field, key) in [(6, "multipleOf"), (7, "maximum"), (9, "minimum")] {
        m.double(field, o.get(key));
    }
    for (field, key) in [
        (8, "exclusiveMaximum"),
        (10, "exclusiveMinimum"),
        (16, "uniqueItems"),
        (27, "readOnly"),
    ] {
        m.boolean(field, o.get(key));
    }
    for (field, key) in [
        (11, "maxLength"),
        (12, "minLength"),
        (14, "maxItems"),
        (15, "minItems"),
        (17, "maxProperties"),
        (18, "minProperties"),
    ] {
        m.int64(field, o.get(key));
    }
    m.strings(19, o.get("required"));
    for e in o
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.any(20, e);
    }
    match o.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Message::default();
            item.boolean(2, Some(&Value::Bool(*b)));
            if !*b {
                // `false` is proto3's default: write it explicitly so the oneof is set.
                encode_key(2, WireType::Varint, &mut item.0);
                encode_varint(0, &mut item.0);
            }
            m.message(21, item);
        }
        Some(sub @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(sub));
            m.message(21, item);
        }
        _ => {}
    }
    if o.contains_key("type") {
        let mut ty = Message::default();
        ty.strings(1, o.get("type"));
        m.message(22, ty);
    }
    match o.get("items") {
        Some(Value::Array(items)) => {
            let mut item = Message::default();
            items.iter().for_each(|s| item.message(1, schema(s)));
            m.message(23, item);
        }
        Some(one @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(one));
            m.message(23, item);
        }
        _ => {}
    }
    for sub in o
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(24, schema(sub));
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        let mut p = Message::default();
        for (name, sub) in props {
            p.named(1, name, schema(sub));
        }
        m.message(25, p);
    }
    if let Some(e) = o.get("example") {
        m.any(30, e);
    }
    m.extensions(31, o);
    m
}

/// `openapi.v2.ParametersItem` of one query or body parameter.
fn parameter(p: &Value) -> Message {
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    let mut param = Message::default();
    if text("in") == "body" {
        let mut body = Message::default();
        body.string(2, text("name"));
        body.string(3, "body");
        body.boolean(4, p.get("required"));
        if let Some(s) = p.get("schema") {
            body.message(5, schema(s));
        }
        param.message(1, body);
    } else {
        let mut query = Message::default();
        query.string(2, text("in"));
        query.string(4, text("name"));
        query.string(6, text("type"));
        query.boolean(20, p.get("uniqueItems"));
        let mut non_body = Message::default();
        non_body.message(3, query);
        param.message(2, non_body);
    }
    let mut item = Message::default();
    item.message(1, param);
    item
}

/// `openapi.v2.Operation`.
fn operation(op: &Value) -> Message {
    let mut m = Message::default();
    let Some(o) = op.as_object() else { return m };
    m.string(
        5,
        o.get("operationId").and_then(Value::as_str).unwrap_or(""),
    );
    m.strings(6, o.get("produces"));
    m.strings(7, o.get("consumes"));
    for p in o
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(8, parameter(p));
    }
    let mut responses = Message::default();
    for (code, r) in o
        .get("responses")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let mut response = Message::default();
        response.string(
            1,
            r.get("description").and_then(Value::as_str).unwrap_or(""),
        );
        if let Some(s) = r.get("schema") {
            let mut item = Message::default();
            item.message(1, schema(s));
            response.message(2, item);
        }
        let mut value = Message::default();
        value.message(1, response);
        responses.named(1, code, value);
    }
    m.message(9, responses);
    m.strings(10, o.get("schemes"));
    m.extensions(13, o);
    m
}

/// The document of [`super::v2::document`] as gnostic's `openapi.v2.Document` bytes.
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut m = Message::default();
    m.string(1, doc["swagger"].as_str().unwrap_or("2.0"));
    let mut info = Message::default();
    info.string(1, doc["info"]["title"].as_str().unwrap_or(""));
    info.string(2, doc["info"]["version"].as_str().unwrap_or(""));
    m.message(2, info);
    let mut paths = Message::default();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        let mut p = Message::default();
        for (field, verb) in [
            (2, "get"),
            (3, "put"),
            (4, "post"),
            (5, "delete"),
            (8, "patch"),
        ] {
            if let Some(op) = item.get(verb) {
                p.message(field, operation(op));
            }
        }
        paths.named(2, path, p);
    }
    m.message(8, paths);
    let mut definitions = Message::default();
    for (name, def) in doc["definitions"].as_object().into_iter().flatten() {
        definitions.named(1, name, schema(def));
    }
    m.message(9, definitions);
    m.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schema_is_written_with_gnostics_field_numbers() {
        let bytes = schema(
            &json!({"type": "string", "description": "d", "x-kubernetes-int-or-string": true}),
        )
        .0;
        let expected: Vec<u8> = [
            &[0x22, 1, b'd'][..],          // description = 4
            &[0xb2, 0x01, 8, 0x0a, 6][..], // type = 22 { value = 1
            b"string",                     // "string" }
        ]
        .concat();
        assert!(bytes.starts_with(&expected), "{bytes:02x?}");
        // vendor_extension = 31 { name = 1, value = 2 { yaml = 2: "true" } }
        let tail = [
            &[0xfa, 0x01][..],
            &[36, 0x0a, 26][..],
            b"x-kubernetes-int-or-string",
            &[0x12, 6, 0x12, 4],
            b"true",
        ]
        .concat();
        assert!(bytes.ends_with(&tail), "{bytes:02x?}");
    }

    #[test]
    fn additional_properties_false_still_sets_the_oneof() {
        let bytes = schema(&json!({"additionalProperties": false})).0;
        assert_eq!(bytes, [0xaa, 0x01, 2, 0x10, 0]);
    }
}
