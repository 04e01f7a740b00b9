//! Sigstore bundles beside an artifact as OCI 1.1 referrers (cosign v3's default): found through
//! the registry's referrers API or, where it has none, the referrers tag schema; and written.
//!
//! A bundle referrer is an image manifest whose `artifactType` and one layer are
//! [`bundle::MEDIA_TYPE`], whose config is the empty descriptor and whose `subject` is the
//! signed manifest; its layer's blob is the bundle JSON (`crate::trust::bundle`). It is found
//! by `GET /v2/REPO/referrers/DIGEST`; a registry without that API answers 404, and the image
//! index tagged `sha256-<hex>` (no `.sig`) in the same repository lists the referrers instead
//! (the OCI distribution specification's fallback, what cosign and oras write there; the
//! registry client reads that tag, and takes a registry's error answer for it as "none"; a
//! registry that answers the API with 400, 405, 501 or `UNSUPPORTED` instead of 404 has its
//! tag read too, an unknown tag meaning none). A
//! referrer of another artifact type, or whose annotations name another predicate (an
//! attestation), is skipped. The
//! manifest's `subject` is not signed and decides nothing: the bundle's statement names the
//! digest it vouches for, and the verifier holds it to that.

use std::collections::BTreeMap;

use oci_client::Reference;
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{
    ImageIndexEntry, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciManifest,
};
use serde_json::{Value, json};

use super::oci::{OciError, Registry, Result, sha256_digest};
use crate::chain::Chain;
use crate::trust::Found;
use crate::trust::bundle::{self, SIGN_PREDICATE};
use crate::trust::found::Envelope;

/// Annotation of a bundle referrer: what its bundle holds.
pub const CONTENT_ANNOTATION: &str = "dev.sigstore.bundle.content";
/// Annotation of a bundle referrer: its statement's predicate type.
pub const PREDICATE_ANNOTATION: &str = "dev.sigstore.bundle.predicateType";
/// Media type of the empty config (`{}`).
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// A bundle larger than this is not read (a key-based one is a few kilobytes).
const MAX_BUNDLE: i64 = 1 << 20;
/// At most this many bundle referrers are read for one digest (a registry listing thousands
/// would otherwise have the host fetch them all).
const MAX_BUNDLES: usize = 32;

/// `repository:sha256-<hex>`, the referrers tag schema's index of what refers to `digest`.
pub fn referrers_tag(reference: &Reference, digest: &str) -> Reference {
    Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        digest.replace(':', "-"),
    )
}

fn is_bundle(media_type: &str) -> bool {
    media_type.starts_with("application/vnd.dev.sigstore.bundle")
}

/// Whether the registry said it has no referrers API otherwise than by the 404 the OCI
/// distribution specification asks for (some answer 400, 405 or 501, or `UNSUPPORTED`).
fn no_referrers_api(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ServerError { code, .. } => matches!(code, 400 | 405 | 406 | 501),
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|e| e.code == OciErrorCode::Unsupported),
        _ => false,
    }
}

/// What a referrer manifest listed as a bundle holds.
enum Referrer {
    /// The bundle JSON.
    Bundle(Vec<u8>),
    /// No bundle layer: not a bundle after all.
    Other,
    /// A bundle not read, and why.
    Refused(String),
}

/// A bundle referrer at `source` that vouches for nothing, and why.
fn refused(source: &str, why: String) -> Found {
    Found {
        source: source.to_owned(),
        envelope: Envelope::Refused(why),
        payload: Vec::new(),
        signature: String::new(),
    }
}

impl Registry {
    /// The signatures in the Sigstore bundles that refer to `digest` in `reference`'s
    /// repository (none when nothing refers to it). Referrers of another artifact type are
    /// skipped; a bundle referrer that cannot be read although the registry answers (its
    /// manifest or blob unknown, too large) is listed as refused, so that it neither hides the
    /// others nor passes unseen; a registry that does not answer is an error.
    pub async fn bundles(&self, reference: &Reference, digest: &str) -> Result<Vec<Found>> {
        let subject = reference.clone_with_digest(digest.to_owned());
        self.client
            .store_auth_if_needed(subject.resolve_registry(), &self.auth)
            .await;
        // The referrers API, or the tag schema on its 404 (a missing tag: nothing refers).
        let manifests = match self.client.pull_referrers(&subject, None).await {
            Ok(index) => index.manifests,
            Err(e) if no_referrers_api(&e) => self.referrers_by_tag(reference, digest).await?,
            Err(e) => return Err(registry_err(&subject)(e)),
        };
        let mut found = Vec::new();
        let entries = manifests.iter().filter(|entry| {
            let predicate = entry
                .annotations
                .as_ref()
                .and_then(|a| a.get(PREDICATE_ANNOTATION));
            entry.artifact_type.as_deref().is_some_and(is_bundle)
                && predicate.is_none_or(|p| p == SIGN_PREDICATE)
        });
        for (n, entry) in entries.enumerate() {
            let at = reference.clone_with_digest(entry.digest.clone());
            let source = at.whole();
            if n == MAX_BUNDLES {
                found.push(refused(
                    &source,
                    "more bundles refer to it than Weir reads".into(),
                ));
                break;
            }
            match self.bundle(&at).await {
                Ok(Referrer::Bundle(bytes)) => found.extend(bundle::read(&source, &bytes)),
                Ok(Referrer::Other) => {}
                Ok(Referrer::Refused(why)) => found.push(refused(&source, why)),
                Err(e) if e.is_unreachable() => return Err(e),
                Err(e) => found.push(refused(
                    &source,
                    format!("it cannot be read: {}", Chain(&e)),
                )),
            }
        }
        Ok(found)
    }

    /// The tag schema's index of the referrers of `digest`, read directly: for a registry that
    /// says it does not support the referrers API otherwise than by a 404.
    async fn referrers_by_tag(
        &self,
        reference: &Reference,
        digest: &str,
    ) -> Result<Vec<ImageIndexEntry>> {
        let tag = referrers_tag(reference, digest);
        match self.client.pull_manifest(&tag, &self.auth).await {
            Ok((OciManifest::ImageIndex(index), _)) => Ok(index.manifests),
            Ok((OciManifest::Image(_), _)) => Ok(Vec::new()),
            Err(e) if super::signatures::is_unknown(&e) => Ok(Vec::new()),
            Err(e) => Err(registry_err(&tag)(e)),
        }
    }

    /// The bundle JSON of the referrer manifest `at`.
    async fn bundle(&self, at: &Reference) -> Result<Referrer> {
        // Checks the manifest's bytes against the entry's digest.
        let (manifest, _) = self
            .client
            .pull_image_manifest(at, &self.auth)
            .await
            .map_err(registry_err(at))?;
        let Some(layer) = manifest.layers.iter().find(|l| is_bundle(&l.media_type)) else {
            return Ok(Referrer::Other);
        };
        if layer.size > MAX_BUNDLE {
            return Ok(Referrer::Refused(format!(
                "its bundle is {} bytes, more than the {MAX_BUNDLE} Weir reads",
                layer.size
            )));
        }
        let mut bytes = Vec::new();
        // Checks the bytes against the layer's digest.
        self.client
            .pull_blob(at, layer, &mut bytes)
            .await
            .map_err(registry_err(at))?;
        Ok(Referrer::Bundle(bytes))
    }

    /// Stores `bundle` (its JSON) as a referrer of the manifest `digest` in `reference`'s
    /// repository: the referrer manifest with `subject` (which a registry with the referrers
    /// API indexes), and its entry in the `sha256-<hex>` index of the tag schema, keeping the
    /// entries there; returns the referrer's reference.
    pub async fn push_bundle(
        &self,
        reference: &Reference,
        digest: &str,
        bundle: &[u8],
    ) -> Result<String> {
        let subject = reference.clone_with_digest(digest.to_owned());
        let subject_err = registry_err(&subject);
        self.client
            .store_auth_if_needed(subject.resolve_registry(), &self.auth)
            .await;
        let (signed, _) = self
            .client
            .pull_manifest_raw(&subject, &self.auth, &[OCI_IMAGE_MEDIA_TYPE])
            .await
            .map_err(subject_err)?;
        let empty = b"{}".to_vec();
        let annotations = BTreeMap::from([
            (CONTENT_ANNOTATION, "dsse-envelope"),
            (PREDICATE_ANNOTATION, SIGN_PREDICATE),
        ]);
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "artifactType": bundle::MEDIA_TYPE,
            "config": {"mediaType": EMPTY_MEDIA_TYPE, "digest": sha256_digest(&empty), "size": 2},
            "layers": [{
                "mediaType": bundle::MEDIA_TYPE,
                "digest": sha256_digest(bundle),
                "size": bundle.len(),
                "annotations": {
                    "org.opencontainers.image.title":
                        format!("{}.sigstore.json", sha256_digest(bundle).replace(':', "-")),
                },
            }],
            "subject": {"mediaType": OCI_IMAGE_MEDIA_TYPE, "digest": digest, "size": signed.len()},
            "annotations": annotations,
        });
        let body = serde_json::to_vec(&manifest).unwrap_or_default();
        let at = reference.clone_with_digest(sha256_digest(&body));
        let at_err = || registry_err(&at);
        self.client
            .push_blob(&at, empty, &sha256_digest(b"{}"))
            .await
            .map_err(at_err())?;
        self.client
            .push_blob(&at, bundle.to_vec(), &sha256_digest(bundle))
            .await
            .map_err(at_err())?;
        let content_type = http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE);
        self.client
            .push_manifest_raw(&at, body.clone(), content_type)
            .await
            .map_err(at_err())?;
        let entry = json!({
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "digest": at.digest(),
            "size": body.len(),
            "artifactType": bundle::MEDIA_TYPE,
            "annotations": annotations,
        });
        self.add_to_referrers_tag(reference, digest, entry).await?;
        Ok(at.whole())
    }

    /// Adds `entry` to the tag schema's index of the referrers of `digest` (made when missing).
    async fn add_to_referrers_tag(
        &self,
        reference: &Reference,
        digest: &str,
        entry: Value,
    ) -> Result<()> {
        let tag = referrers_tag(reference, digest);
        let tag_err = || registry_err(&tag);
        let mut index = match self
            .client
            .pull_manifest_raw(&tag, &self.auth, &[OCI_IMAGE_INDEX_MEDIA_TYPE])
            .await
        {
            Ok((bytes, _)) => serde_json::from_slice(&bytes).unwrap_or_else(|_| json!({})),
            Err(e) if super::signatures::is_unknown(&e) => json!({}),
            Err(source) => return Err(tag_err()(source)),
        };
        if !index.is_object() {
            index = json!({});
        }
        index["schemaVersion"] = json!(2);
        index["mediaType"] = json!(OCI_IMAGE_INDEX_MEDIA_TYPE);
        let manifests = index
            .as_object_mut()
            .map(|o| o.entry("manifests").or_insert_with(|| json!([])));
        if let Some(Value::Array(manifests)) = manifests {
            manifests.retain(|m| m["digest"] != entry["digest"]);
            manifests.push(entry);
        }
        let body = serde_json::to_vec(&index).unwrap_or_default();
        let content_type = http::HeaderValue::from_static(OCI_IMAGE_INDEX_MEDIA_TYPE);
        self.client
            .push_manifest_raw(&tag, body, content_type)
            .await
            .map_err(tag_err())?;
        Ok(())
    }
}

/// An error of the registry client, at `at`.
fn registry_err(at: &Reference) -> impl FnOnce(OciDistributionError) -> OciError + use<> {
    let reference = at.whole();
    move |source| OciError::Registry { reference, source }
}

#[cfg(test)]
#[path = "referrers_tests.rs"]
mod tests;
