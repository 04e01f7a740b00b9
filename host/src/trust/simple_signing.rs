//! cosign's simple-signing payload: the document a signature covers, naming the manifest digest
//! it vouches for and the annotations the signer added.
//!
//! ```json
//! {"critical": {"identity": {"docker-reference": "registry.example/weir/blog"},
//!               "image": {"docker-manifest-digest": "sha256:…"},
//!               "type": "cosign container image signature"},
//!  "optional": {"team": "payments"}}
//! ```
//! The signature is over these exact bytes, so they are kept as they came; the reference in
//! `identity` is not checked (cosign's specification says it is ignored), the digest is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Media type of the layer that holds a payload.
pub const MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// `critical.type` of a cosign signature.
pub const TYPE: &str = "cosign container image signature";

/// A simple-signing payload.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Payload {
    /// What the signature vouches for.
    pub critical: Critical,
    /// The signer's annotations (`cosign sign -a KEY=VALUE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<BTreeMap<String, Value>>,
}

/// The `critical` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Critical {
    /// The repository signed (not checked).
    pub identity: Identity,
    /// The manifest digest signed.
    pub image: Image,
    /// [`TYPE`].
    #[serde(rename = "type")]
    pub type_: String,
}

/// `critical.identity`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Identity {
    /// `registry/repository` (or with a tag).
    #[serde(rename = "docker-reference")]
    pub docker_reference: String,
}

/// `critical.image`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Image {
    /// `sha256:…` of the manifest.
    #[serde(rename = "docker-manifest-digest", alias = "Docker-manifest-digest")]
    pub docker_manifest_digest: String,
}

impl Payload {
    /// The payload vouching for `digest` in `repository`, with `annotations`.
    pub fn new(repository: &str, digest: &str, annotations: &BTreeMap<String, String>) -> Payload {
        Payload {
            critical: Critical {
                identity: Identity {
                    docker_reference: repository.to_owned(),
                },
                image: Image {
                    docker_manifest_digest: digest.to_owned(),
                },
                type_: TYPE.to_owned(),
            },
            optional: (!annotations.is_empty()).then(|| {
                annotations
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect()
            }),
        }
    }

    /// The bytes to sign and store.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a payload; `Err` says why it is not a cosign simple-signing document.
    pub fn parse(bytes: &[u8]) -> Result<Payload, String> {
        let payload: Payload = serde_json::from_slice(bytes)
            .map_err(|e| format!("its payload is not a simple-signing document ({e})"))?;
        if payload.critical.type_ != TYPE {
            return Err(format!(
                "its payload's type is {:?}, not {TYPE:?}",
                payload.critical.type_
            ));
        }
        Ok(payload)
    }

    /// The digest it vouches for.
    pub fn digest(&self) -> &str {
        &self.critical.image.docker_manifest_digest
    }

    /// Whether every one of `required` is among its annotations, with that value.
    pub fn has_annotations(&self, required: &BTreeMap<String, String>) -> bool {
        required.iter().all(|(key, value)| {
            self.optional
                .as_ref()
                .and_then(|o| o.get(key))
                .is_some_and(|v| v.as_str() == Some(value.as_str()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_reads_back_as_written_and_in_the_specification_s_capitalisation() {
        let annotations = BTreeMap::from([("team".to_owned(), "payments".to_owned())]);
        let digest = format!("sha256:{}", "ab".repeat(32));
        let payload = Payload::new("localhost:5000/weir/blog", &digest, &annotations);
        let read = Payload::parse(&payload.to_bytes()).unwrap();
        assert_eq!(read, payload);
        assert_eq!(read.digest(), digest);
        assert!(read.has_annotations(&annotations));
        assert!(read.has_annotations(&BTreeMap::new()));
        let other = BTreeMap::from([("team".to_owned(), "search".to_owned())]);
        assert!(!read.has_annotations(&other));

        let spec = br#"{"critical":{"identity":{"docker-reference":"testing/manifest"},
            "image":{"Docker-manifest-digest":"sha256:20be"},"type":"cosign container image signature"},
            "optional":{"creator":"atomic","timestamp":1458239713}}"#;
        assert_eq!(Payload::parse(spec).unwrap().digest(), "sha256:20be");
        let wrong = br#"{"critical":{"identity":{"docker-reference":"x"},"image":{"docker-manifest-digest":"sha256:1"},"type":"atomic container signature"}}"#;
        assert!(Payload::parse(wrong).unwrap_err().contains("type"));
        assert!(Payload::parse(b"{}").is_err());
    }
}
