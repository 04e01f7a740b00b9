//! Sigstore bundles (v0.3 JSON): the signatures they hold, read for the verifier, and the one
//! `weir push --sign KEY --bundle` writes, as cosign v3 signs an image.
//!
//! ```json
//! {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
//!  "verificationMaterial": {"publicKey": {"hint": "…"}, "tlogEntries": […]},
//!  "dsseEnvelope": {"payload": "<base64 statement>", "payloadType": "application/vnd.in-toto+json",
//!                   "signatures": [{"sig": "<base64 DER ECDSA>", "keyid": ""}]}}
//! ```
//! The statement is an in-toto Statement v1: `subject[].digest.sha256` names the signed
//! manifest, `subject[].annotations` the signer's annotations, `predicateType` is
//! [`SIGN_PREDICATE`]. Each DSSE signature is over [`pae`] of the payload type and the payload's
//! raw bytes. The verification material is a hint only: the keys in the policy are the trust,
//! and no transparency log entry is read or required.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::found::{Envelope, Found};
use super::keys::PrivateKey;

/// Media type of a bundle (v0.3): the referrer's `artifactType` and its layer's media type.
pub const MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// `payloadType` of a DSSE envelope holding an in-toto statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// `predicateType` of a cosign image signature (an attestation has another).
pub const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// `_type` of an in-toto statement (v1; v0.1 has the same subjects).
const STATEMENT_TYPES: [&str; 2] = [
    "https://in-toto.io/Statement/v1",
    "https://in-toto.io/Statement/v0.1",
];

/// DSSE's pre-authentication encoding, the bytes a DSSE signature is over:
/// `"DSSEv1" SP len(type) SP type SP len(payload) SP payload`, lengths in ASCII decimal bytes.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A bundle, as far as Weir reads it.
#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    #[serde(default)]
    verification_material: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dsse_envelope: Option<DsseEnvelope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_signature: Option<Value>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct DsseEnvelope {
    payload: String,
    payload_type: String,
    signatures: Vec<DsseSignature>,
}

#[derive(Debug, Deserialize, Serialize)]
struct DsseSignature {
    sig: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    keyid: String,
}

/// The signatures a bundle holds (one per DSSE signature), found at `source`. A bundle that
/// does not read, or holds a message signature, gives one [`Envelope::Refused`] saying why, so
/// that it is listed and its refusal told.
pub fn read(source: &str, bytes: &[u8]) -> Vec<Found> {
    let refused = |why: String| {
        vec![Found {
            source: source.to_owned(),
            envelope: Envelope::Refused(why),
            payload: bytes.to_vec(),
            signature: String::new(),
        }]
    };
    let bundle: Bundle = match serde_json::from_slice(bytes) {
        Ok(bundle) => bundle,
        Err(e) => return refused(format!("it is not a Sigstore bundle ({e})")),
    };
    if !bundle
        .media_type
        .starts_with("application/vnd.dev.sigstore.bundle")
    {
        return refused(format!(
            "its media type is {:?}, not a Sigstore bundle's",
            bundle.media_type
        ));
    }
    let Some(envelope) = bundle.dsse_envelope else {
        return refused(if bundle.message_signature.is_some() {
            "it holds a message signature, which signs bytes and names no artifact: an artifact's \
             bundle must hold a DSSE statement naming its digest (what `cosign sign` writes)"
                .to_owned()
        } else {
            "it holds no DSSE envelope".to_owned()
        });
    };
    let Some(payload) = decode(&envelope.payload) else {
        return refused("its DSSE payload is not base64".to_owned());
    };
    if envelope.signatures.is_empty() {
        return refused("its DSSE envelope has no signature".to_owned());
    }
    envelope
        .signatures
        .iter()
        .map(|s| Found {
            source: source.to_owned(),
            envelope: Envelope::Dsse {
                payload_type: envelope.payload_type.clone(),
            },
            payload: payload.clone(),
            // As the keys read it: standard base64 (protobuf JSON may write URL-safe).
            signature: decode(&s.sig).map_or_else(String::new, |sig| STANDARD.encode(sig)),
        })
        .collect()
}

fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD
        .decode(text.trim())
        .or_else(|_| URL_SAFE.decode(text.trim()))
        .ok()
}

/// An in-toto statement, as far as Weir reads it.
#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Statement {
    /// The statement type.
    #[serde(rename = "_type")]
    pub type_: String,
    /// What it is about.
    pub subject: Vec<Subject>,
    /// What kind of claim it makes.
    pub predicate_type: String,
    /// The claim (empty for a signature).
    #[serde(default)]
    pub predicate: Value,
}

/// One subject of a statement.
#[derive(Debug, Deserialize, Serialize)]
pub struct Subject {
    /// Its digests by algorithm (`sha256` → hex).
    pub digest: BTreeMap<String, String>,
    /// The signer's annotations (`cosign sign -a`).
    #[serde(default)]
    pub annotations: BTreeMap<String, Value>,
}

impl Statement {
    /// Reads the statement a DSSE envelope of `payload_type` carries; `Err` says why it is not
    /// a cosign signature statement.
    pub fn parse(payload_type: &str, payload: &[u8]) -> Result<Statement, String> {
        if payload_type != IN_TOTO_PAYLOAD_TYPE {
            return Err(format!(
                "its DSSE payload type is {payload_type:?}, not {IN_TOTO_PAYLOAD_TYPE:?}"
            ));
        }
        let statement: Statement = serde_json::from_slice(payload)
            .map_err(|e| format!("its payload is not an in-toto statement ({e})"))?;
        if !STATEMENT_TYPES.contains(&statement.type_.as_str()) {
            return Err(format!(
                "its statement's type is {:?}, not an in-toto statement",
                statement.type_
            ));
        }
        if statement.predicate_type != SIGN_PREDICATE {
            return Err(format!(
                "it is an attestation ({}), not a signature ({SIGN_PREDICATE})",
                statement.predicate_type
            ));
        }
        Ok(statement)
    }

    /// Each subject's `sha256:…` digest with its annotations.
    pub fn subjects(&self) -> impl Iterator<Item = (String, BTreeMap<String, Value>)> + '_ {
        self.subject.iter().filter_map(|s| {
            let hex = s.digest.get("sha256")?;
            Some((format!("sha256:{hex}"), s.annotations.clone()))
        })
    }
}

/// The bundle `key` signs for the manifest `digest` (`sha256:…`), with `annotations` on its
/// subject: a DSSE envelope of cosign's signature statement, as `cosign sign --key` (v3) makes
/// it, with the public key's hint (base64 of the SHA-256 of its DER form) and no log entry.
pub fn sign(key: &PrivateKey, digest: &str, annotations: &BTreeMap<String, String>) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    let statement = Statement {
        type_: STATEMENT_TYPES[0].to_owned(),
        subject: vec![Subject {
            digest: BTreeMap::from([("sha256".to_owned(), hex.to_owned())]),
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        }],
        predicate_type: SIGN_PREDICATE.to_owned(),
        predicate: Value::Object(serde_json::Map::new()),
    };
    let payload = serde_json::to_vec(&statement).unwrap_or_default();
    let signature = key.sign(&pae(IN_TOTO_PAYLOAD_TYPE, &payload));
    let bundle = Bundle {
        media_type: MEDIA_TYPE.to_owned(),
        verification_material: serde_json::json!({"publicKey": {"hint": hint(key)}}),
        dsse_envelope: Some(DsseEnvelope {
            payload: STANDARD.encode(&payload),
            payload_type: IN_TOTO_PAYLOAD_TYPE.to_owned(),
            signatures: vec![DsseSignature {
                sig: signature,
                keyid: String::new(),
            }],
        }),
        message_signature: None,
    };
    serde_json::to_vec(&bundle).unwrap_or_default()
}

/// cosign's hint for a key: base64 of the SHA-256 of its public key's DER form.
fn hint(key: &PrivateKey) -> String {
    use p256::pkcs8::{DecodePublicKey, EncodePublicKey};
    use sha2::{Digest, Sha256};
    p256::PublicKey::from_public_key_pem(&key.public_pem())
        .and_then(|public| public.to_public_key_der())
        .map(|der| STANDARD.encode(Sha256::digest(der.as_bytes())))
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "bundle_tests.rs"]
mod tests;
