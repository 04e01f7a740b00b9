//! What of an observed child the plugin may see: everything but a Secret's data.
//!
//! Secrets are write-only to plugins. A plugin may ask for a Secret (its content comes from
//! the parent's spec or from the plugin), but what the cluster put in one, such as a token the
//! token controller filled in, never flows back into the sandbox, where the plugin could copy it
//! into a ConfigMap or a status. An observed Secret reaches the plugin without `data` and
//! `stringData` (and without the `kubectl.kubernetes.io/last-applied-configuration`
//! annotation, which can hold a copy of them), and with one annotation instead:
//!
//! `weir.dev/data-sha256`: the lowercase hex SHA-256 of the Secret's data in canonical form,
//! the compact JSON object mapping each key to its base64 value (standard alphabet, padded),
//! keys sorted, e.g. `{"password":"aHVudGVyMg==","user":"YWRh"}`. That is `data` exactly as
//! the API server returns it (with any `stringData` folded in), so a plugin can tell whether
//! the Secret it asked for is applied by hashing its own desired `data` the same way.
//! Secret keys are limited to `[-._a-zA-Z0-9]`, so no JSON escaping can differ between languages.
//!
//! Redacting twice is redacting once: a Secret with neither `data` nor `stringData` that carries
//! the annotation already (one a recorded fixture holds) keeps it. Whoever could write such an
//! annotation could as well write the data it stands for.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use kube::api::DynamicObject;
use serde_json::Value;

use sha2::{Digest, Sha256};

use crate::runtime::cache::LAST_APPLIED;

/// The annotation carrying the hash of a redacted Secret's data.
pub const DATA_HASH: &str = "weir.dev/data-sha256";

/// The child as the plugin may see it: the same `Arc` for anything but a Secret (no copy),
/// a redacted copy for a Secret. An object without `apiVersion`/`kind` (the watch fills them
/// in, so this should not happen) is treated as a Secret: unknown means redacted.
pub fn for_plugin(child: &Arc<DynamicObject>) -> Arc<DynamicObject> {
    if is_secret(child) {
        Arc::new(redacted(child))
    } else {
        Arc::clone(child)
    }
}

/// Whether `object` is (or may be) a core `v1` Secret.
fn is_secret(object: &DynamicObject) -> bool {
    object
        .types
        .as_ref()
        .is_none_or(|t| t.api_version == "v1" && t.kind == "Secret")
}

/// A copy of `secret` without its data, with [`DATA_HASH`] instead.
pub fn redacted(secret: &DynamicObject) -> DynamicObject {
    let mut copy = secret.clone();
    let has_data = ["data", "stringData"]
        .iter()
        .any(|k| secret.data.get(k).is_some());
    let redacted_before = secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DATA_HASH))
        .filter(|_| !has_data);
    let hash = match redacted_before {
        Some(hash) => hash.clone(),
        None => data_hash(&secret.data),
    };
    if let Some(fields) = copy.data.as_object_mut() {
        fields.remove("data");
        fields.remove("stringData");
    }
    let annotations = copy.metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.remove(LAST_APPLIED);
    annotations.insert(DATA_HASH.to_owned(), hash);
    copy
}

/// The hex SHA-256 of the canonical form of a Secret's data (see the module documentation):
/// `fields` is the object's content (with `data` and optionally `stringData`).
pub fn data_hash(fields: &Value) -> String {
    let mut canonical: BTreeMap<String, Value> = BTreeMap::new();
    if let Some(data) = fields.get("data").and_then(Value::as_object) {
        for (key, value) in data {
            canonical.insert(key.clone(), value.clone());
        }
    }
    // The API server folds `stringData` into `data` on write, `stringData` winning.
    if let Some(strings) = fields.get("stringData").and_then(Value::as_object) {
        for (key, value) in strings {
            let bytes = value.as_str().unwrap_or_default().as_bytes().to_vec();
            let encoded = serde_json::to_value(ByteString(bytes)).unwrap_or_default();
            canonical.insert(key.clone(), encoded);
        }
    }
    let text = serde_json::to_string(&canonical).unwrap_or_default();
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(api_version: &str, kind: &str, content: Value) -> Arc<DynamicObject> {
        let mut value = content;
        value["apiVersion"] = api_version.into();
        value["kind"] = kind.into();
        value["metadata"] = json!({"name": "x", "namespace": "ns", "annotations": {"keep": "me"}});
        Arc::new(serde_json::from_value(value).unwrap())
    }

    fn token() -> Arc<DynamicObject> {
        object(
            "v1",
            "Secret",
            json!({"type": "kubernetes.io/service-account-token",
                   "data": {"token": "c2VjcmV0", "ca.crt": "Y2E="}}),
        )
    }

    fn hash_of(seen: &DynamicObject) -> &str {
        seen.metadata.annotations.as_ref().unwrap()[DATA_HASH].as_str()
    }

    #[test]
    fn a_secret_reaches_the_plugin_without_its_data_but_with_a_hash_of_it() {
        let secret = token();
        let seen = for_plugin(&secret);
        assert!(seen.data.get("data").is_none(), "{:?}", seen.data);
        assert!(!serde_json::to_string(&*seen).unwrap().contains("c2VjcmV0"));
        assert_eq!(seen.data["type"], "kubernetes.io/service-account-token");
        assert_eq!(seen.metadata.name.as_deref(), Some("x"));
        assert_eq!(seen.metadata.annotations.as_ref().unwrap()["keep"], "me");
        // The documented canonical form: compact JSON, keys sorted.
        let expected = hex::encode(Sha256::digest(br#"{"ca.crt":"Y2E=","token":"c2VjcmV0"}"#));
        assert_eq!(hash_of(&seen), expected);
        assert!(
            secret.data.get("data").is_some(),
            "the cached object is untouched"
        );
    }

    #[test]
    fn anything_but_a_secret_is_passed_through_without_a_copy() {
        let configmap = object("v1", "ConfigMap", json!({"data": {"a": "b"}}));
        let seen = for_plugin(&configmap);
        assert!(Arc::ptr_eq(&seen, &configmap));
        let custom = object("example.com/v1", "Secret", json!({"data": {"a": "b"}}));
        assert!(Arc::ptr_eq(&for_plugin(&custom), &custom));
    }

    #[test]
    fn an_untyped_object_is_redacted_because_it_may_be_a_secret() {
        let mut untyped = (*token()).clone();
        untyped.types = None;
        let seen = for_plugin(&Arc::new(untyped));
        assert!(seen.data.get("data").is_none());
        assert!(seen.types.is_none());
    }

    #[test]
    fn string_data_and_last_applied_are_removed_and_string_data_hashes_like_its_base64() {
        let mut secret = (*object(
            "v1",
            "Secret",
            json!({"stringData": {"token": "secret"}, "data": {"token": "b2xk"}}),
        ))
        .clone();
        secret.metadata.annotations.as_mut().unwrap().insert(
            LAST_APPLIED.into(),
            r#"{"stringData":{"token":"secret"}}"#.into(),
        );
        let seen = for_plugin(&Arc::new(secret));
        let text = serde_json::to_string(&*seen).unwrap();
        assert!(
            !text.contains("secret\"") && !text.contains("b2xk"),
            "{text}"
        );
        assert!(
            !seen
                .metadata
                .annotations
                .as_ref()
                .unwrap()
                .contains_key(LAST_APPLIED)
        );
        // `stringData` wins over `data` and hashes as its base64 ("secret" → "c2VjcmV0").
        let same = object("v1", "Secret", json!({"data": {"token": "c2VjcmV0"}}));
        assert_eq!(hash_of(&seen), hash_of(&for_plugin(&same)));
    }

    #[test]
    fn the_hash_changes_with_the_data_and_not_with_anything_else() {
        let a = object("v1", "Secret", json!({"data": {"k": "YQ=="}}));
        let b = object("v1", "Secret", json!({"data": {"k": "Yg=="}}));
        let mut a_relabelled = (*a).clone();
        a_relabelled.metadata.labels = Some([("l".to_owned(), "v".to_owned())].into());
        assert_ne!(hash_of(&for_plugin(&a)), hash_of(&for_plugin(&b)));
        assert_eq!(
            hash_of(&for_plugin(&a)),
            hash_of(&for_plugin(&Arc::new(a_relabelled)))
        );
        let spoofed = object("v1", "Secret", json!({"data": {}}));
        let mut spoofed = (*spoofed).clone();
        spoofed
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(DATA_HASH.into(), "forged".into());
        let seen = for_plugin(&Arc::new(spoofed));
        assert_eq!(hash_of(&seen), hex::encode(Sha256::digest(b"{}")));
    }

    #[test]
    fn redacting_a_redacted_secret_again_keeps_its_hash() {
        let once = for_plugin(&token());
        let twice = for_plugin(&once);
        assert_eq!(hash_of(&twice), hash_of(&once));
        assert_eq!(
            serde_json::to_value(&*twice).unwrap(),
            serde_json::to_value(&*once).unwrap()
        );
    }
}
