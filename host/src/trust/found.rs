//! A signature found for an artifact, in either format cosign stores: the bytes its key signed,
//! and the digests and annotations it vouches for.
//!
//! - **Tag signature** (cosign's `sha256-<hex>.sig` tag): the key signed a simple-signing payload
//!   as it is; the payload names the manifest digest in `critical.image` and carries the
//!   signer's `-a` annotations in `optional` ([`super::simple_signing`]).
//! - **Bundle** (a Sigstore bundle, an OCI 1.1 referrer: cosign v3's default): the key signed
//!   DSSE's pre-authentication encoding of an in-toto statement ([`super::bundle`]); the
//!   statement names the digests in `subject[].digest.sha256`, and the subject entry naming a
//!   digest carries the `-a` annotations (`subject[].annotations`, where cosign v3 writes them).
//!   Its `predicateType` must be cosign's signature predicate: an attestation (provenance, an
//!   SBOM) signed by the same key is not a signature of the artifact.
//! - A bundle holding a `messageSignature` (what `cosign sign-blob` writes) signs a digest of
//!   bytes and names no statement: it is refused for an artifact, whatever key signed it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use super::bundle;
use super::simple_signing::Payload;

/// Why a statement without a `sha256` subject vouches for nothing.
const NO_SUBJECT: &str = "its statement names no sha256 digest";

/// One signature found for an artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Where it was found, for people (`TAG layer N`, `REPO@DIGEST`).
    pub source: String,
    /// Its format, and how its signature covers the payload.
    pub envelope: Envelope,
    /// The signed payload, as stored (a simple-signing document, or a DSSE statement).
    pub payload: Vec<u8>,
    /// The signature (base64).
    pub signature: String,
}

/// How a signature covers its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Envelope {
    /// A tag signature: over the simple-signing payload's bytes.
    SimpleSigning,
    /// A bundle's DSSE envelope: over `PAE(payload_type, payload)`.
    Dsse {
        /// The envelope's `payloadType`.
        payload_type: String,
    },
    /// A bundle that cannot vouch for an artifact, and why (a message signature, a bundle
    /// that does not read).
    Refused(String),
}

impl Found {
    /// The format, as `weir verify` and refusals name it.
    pub fn format(&self) -> &'static str {
        match self.envelope {
            Envelope::SimpleSigning => "tag signature",
            Envelope::Dsse { .. } | Envelope::Refused(_) => "bundle",
        }
    }

    /// The bytes the signature is over.
    pub fn signed(&self) -> Cow<'_, [u8]> {
        match &self.envelope {
            Envelope::Dsse { payload_type } => Cow::Owned(bundle::pae(payload_type, &self.payload)),
            Envelope::SimpleSigning | Envelope::Refused(_) => Cow::Borrowed(&self.payload),
        }
    }

    /// The digests it vouches for; `Err` says why it vouches for none.
    pub fn digests(&self) -> Result<Vec<String>, String> {
        match &self.envelope {
            Envelope::SimpleSigning => {
                Payload::parse(&self.payload).map(|p| vec![p.digest().to_owned()])
            }
            Envelope::Dsse { payload_type } => {
                let statement = bundle::Statement::parse(payload_type, &self.payload)?;
                let digests: Vec<String> = statement.subjects().map(|(d, _)| d).collect();
                if digests.is_empty() {
                    return Err(NO_SUBJECT.to_owned());
                }
                Ok(digests)
            }
            Envelope::Refused(why) => Err(why.clone()),
        }
    }

    /// The signer's annotations for `digest`, when it vouches for `digest`; `Err` says why it
    /// does not (another artifact's signature names that one).
    pub fn vouches_for(&self, digest: &str) -> Result<BTreeMap<String, Value>, String> {
        let elsewhere = |named: &[String]| {
            format!(
                "it vouches for {}, not {digest} (a signature of another artifact)",
                named.join(", ")
            )
        };
        match &self.envelope {
            Envelope::SimpleSigning => {
                let payload = Payload::parse(&self.payload)?;
                if payload.digest() != digest {
                    return Err(elsewhere(&[payload.digest().to_owned()]));
                }
                Ok(payload.optional.unwrap_or_default())
            }
            Envelope::Dsse { payload_type } => {
                let statement = bundle::Statement::parse(payload_type, &self.payload)?;
                let mut named = Vec::new();
                for (subject, annotations) in statement.subjects() {
                    if subject == digest {
                        return Ok(annotations);
                    }
                    named.push(subject);
                }
                if named.is_empty() {
                    return Err(NO_SUBJECT.to_owned());
                }
                Err(elsewhere(&named))
            }
            Envelope::Refused(why) => Err(why.clone()),
        }
    }
}

/// Whether every one of `required` is among `annotations`, with that value.
pub fn carries(annotations: &BTreeMap<String, Value>, required: &BTreeMap<String, String>) -> bool {
    required
        .iter()
        .all(|(key, value)| annotations.get(key).and_then(Value::as_str) == Some(value.as_str()))
}
