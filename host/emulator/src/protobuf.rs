//! Decoding of the few protobuf bodies kubectl's generators send (`create namespace|configmap|secret|serviceaccount`).

use serde_json::{Map, Value, json};

/// A protobuf body the emulator cannot turn into JSON.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bytes are not a well-formed protobuf message.
    #[error("malformed protobuf body at byte {0}")]
    Malformed(usize),
    /// The envelope's kind has no decoder here.
    #[error("protobuf bodies of kind {0:?} are not supported; send JSON (e.g. kubectl apply -f)")]
    UnsupportedKind(String),
}

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(b: &[u8], pos: &mut usize) -> Result<u64, Error> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos).ok_or(Error::Malformed(*pos))?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Error::Malformed(*pos))
}

fn fields(b: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, Error> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let tag = varint(b, &mut pos)?;
        let wire = match tag & 7 {
            0 => Wire::Varint(varint(b, &mut pos)?),
            1 => {
                pos += 8;
                Wire::Fixed
            }
            2 => {
                let len =
                    usize::try_from(varint(b, &mut pos)?).map_err(|_| Error::Malformed(pos))?;
                let end = pos
                    .checked_add(len)
                    .filter(|e| *e <= b.len())
                    .ok_or(Error::Malformed(pos))?;
                let slice = &b[pos..end];
                pos = end;
                Wire::Bytes(slice)
            }
            5 => {
                pos += 4;
                Wire::Fixed
            }
            _ => return Err(Error::Malformed(pos)),
        };
        out.push((tag >> 3, wire));
    }
    Ok(out)
}

fn text(b: &[u8]) -> Value {
    Value::String(String::from_utf8_lossy(b).into_owned())
}

fn base64(b: &[u8]) -> Value {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(b.len().div_ceil(3) * 4);
    for chunk in b.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, x)| n | (u32::from(*x) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    Value::String(s)
}

/// A `map<string, X>` entry: field 1 key, field 2 value.
fn map_entry(b: &[u8], value: fn(&[u8]) -> Value) -> Result<(String, Value), Error> {
    let mut key = String::new();
    let mut val = Value::String(String::new());
    for (n, w) in fields(b)? {
        match (n, w) {
            (1, Wire::Bytes(k)) => key = String::from_utf8_lossy(k).into_owned(),
            (2, Wire::Bytes(v)) => val = value(v),
            _ => {}
        }
    }
    Ok((key, val))
}

fn insert_entry(
    obj: &mut Map<String, Value>,
    field: &str,
    b: &[u8],
    value: fn(&[u8]) -> Value,
) -> Result<(), Error> {
    let (k, v) = map_entry(b, value)?;
    if let Some(m) = obj
        .entry(field)
        .or_insert_with(|| json!({}))
        .as_object_mut()
    {
        m.insert(k, v);
    }
    Ok(())
}

fn push(obj: &mut Map<String, Value>, field: &str, v: Value) {
    if let Some(a) = obj.entry(field).or_insert_with(|| json!([])).as_array_mut() {
        a.push(v);
    }
}

fn object_meta(b: &[u8]) -> Result<Value, Error> {
    let mut m = Map::new();
    for (n, w) in fields(b)? {
        match (n, w) {
            (1, Wire::Bytes(v)) => _ = m.insert("name".into(), text(v)),
            (2, Wire::Bytes(v)) => _ = m.insert("generateName".into(), text(v)),
            (3, Wire::Bytes(v)) => _ = m.insert("namespace".into(), text(v)),
            (11, Wire::Bytes(v)) => insert_entry(&mut m, "labels", v, text)?,
            (12, Wire::Bytes(v)) => insert_entry(&mut m, "annotations", v, text)?,
            (14, Wire::Bytes(v)) => push(&mut m, "finalizers", text(v)),
            _ => {}
        }
    }
    Ok(Value::Object(m))
}

/// Decode a `k8s\0`-enveloped protobuf body into the JSON object it carries.
pub fn decode(body: &[u8]) -> Result<Value, Error> {
    let inner = body.strip_prefix(b"k8s\0").ok_or(Error::Malformed(0))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, w) in fields(inner)? {
        match (n, w) {
            (1, Wire::Bytes(tm)) => {
                for (n, w) in fields(tm)? {
                    match (n, w) {
                        (1, Wire::Bytes(v)) => {
                            api_version = String::from_utf8_lossy(v).into_owned()
                        }
                        (2, Wire::Bytes(v)) => kind = String::from_utf8_lossy(v).into_owned(),
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    if !matches!(
        kind.as_str(),
        "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount"
    ) {
        return Err(Error::UnsupportedKind(kind));
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    for (n, w) in fields(raw)? {
        match (kind.as_str(), n, w) {
            (_, 1, Wire::Bytes(v)) => _ = obj.insert("metadata".into(), object_meta(v)?),
            ("ConfigMap", 2, Wire::Bytes(v)) => insert_entry(&mut obj, "data", v, text)?,
            ("ConfigMap", 3, Wire::Bytes(v)) => insert_entry(&mut obj, "binaryData", v, base64)?,
            ("ConfigMap", 4, Wire::Varint(x)) | ("Secret", 5, Wire::Varint(x)) => {
                _ = obj.insert("immutable".into(), json!(x != 0))
            }
            ("Secret", 2, Wire::Bytes(v)) => insert_entry(&mut obj, "data", v, base64)?,
            ("Secret", 3, Wire::Bytes(v)) => _ = obj.insert("type".into(), text(v)),
            ("Secret", 4, Wire::Bytes(v)) => insert_entry(&mut obj, "stringData", v, text)?,
            ("ServiceAccount", 4, Wire::Varint(x)) => {
                _ = obj.insert("automountServiceAccountToken".into(), json!(x != 0))
            }
            _ => {}
        }
    }
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u8, bytes: &[u8]) -> Vec<u8> {
        let mut v = vec![(n << 3) | 2, bytes.len() as u8];
        v.extend_from_slice(bytes);
        v
    }

    #[test]
    fn a_configmap_envelope_decodes_to_json() {
        let meta = field(1, b"cfg");
        let entry = [field(1, b"k"), field(2, b"v")].concat();
        let raw = [field(1, &meta), field(2, &entry)].concat();
        let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [b"k8s\0".to_vec(), field(1, &type_meta), field(2, &raw)].concat();
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn binary_values_become_base64() {
        assert_eq!(base64(b"hello"), json!("aGVsbG8="));
        assert_eq!(base64(b"hi!"), json!("aGkh"));
    }
}
