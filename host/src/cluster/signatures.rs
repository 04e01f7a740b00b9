//! cosign tag signatures beside an artifact: the `sha256-<hex>.sig` tag of its repository, read
//! (every signature layer of its manifest) and written (one more layer); and every signature of
//! a digest gathered, the tag's and the bundles that refer to it (`super::referrers`).
//!
//! The tag names an image manifest whose layers are simple-signing payloads
//! (`application/vnd.dev.cosign.simplesigning.v1+json`), each with its signature in the layer
//! annotation `dev.cosignproject.cosign/signature`: what `cosign sign --key` writes and
//! `cosign verify --key` reads. A missing tag means no signature; the registry client checks
//! each payload against its layer digest, so a payload is the one the manifest names.

use std::collections::BTreeMap;

use oci_client::Reference;
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};

use super::oci::{OciError, Registry, Result, sha256_digest};
use crate::trust::Found;
use crate::trust::found::Envelope;
use crate::trust::simple_signing::MEDIA_TYPE;

/// The layer annotation that holds a signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// `repository:sha256-<hex>.sig`, where cosign keeps the signatures of `digest`.
pub fn signature_reference(reference: &Reference, digest: &str) -> Reference {
    let tag = format!("{}.sig", digest.replace(':', "-"));
    Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        tag,
    )
}

impl Registry {
    /// Every signature stored for the artifact `digest` in `reference`'s repository, in both of
    /// cosign's formats: the layers of its `sha256-<hex>.sig` tag, then the Sigstore bundles
    /// that refer to it (`super::referrers`). This is the one place a digest's signatures are
    /// gathered, for the host and for `weir verify`; none when neither exists.
    pub async fn signatures(&self, reference: &Reference, digest: &str) -> Result<Vec<Found>> {
        let mut found = self.tag_signatures(reference, digest).await?;
        found.extend(self.bundles(reference, digest).await?);
        Ok(found)
    }

    /// The signatures of the `sha256-<hex>.sig` tag (none when the tag does not exist).
    async fn tag_signatures(&self, reference: &Reference, digest: &str) -> Result<Vec<Found>> {
        let tag = signature_reference(reference, digest);
        let Some(manifest) = self.signature_manifest(&tag).await? else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        for (n, layer) in manifest.layers.iter().enumerate() {
            let Some(signature) = layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(SIGNATURE_ANNOTATION))
            else {
                continue;
            };
            let mut payload = Vec::new();
            self.client
                .pull_blob(&tag, layer, &mut payload)
                .await
                .map_err(|source| OciError::Registry {
                    reference: tag.whole(),
                    source,
                })?;
            found.push(Found {
                source: format!("{} layer {n}", tag.whole()),
                envelope: Envelope::SimpleSigning,
                payload,
                signature: signature.clone(),
            });
        }
        Ok(found)
    }

    /// Adds a signature layer (`payload`, `signature`) to the signature tag of `digest` in
    /// `reference`'s repository, keeping the ones there; returns the tag written.
    pub async fn push_signature(
        &self,
        reference: &Reference,
        digest: &str,
        payload: &[u8],
        signature: &str,
    ) -> Result<String> {
        let tag = signature_reference(reference, digest);
        let name = tag.whole();
        let registry_err = |source| OciError::Registry {
            reference: name.clone(),
            source,
        };
        let mut layers = self
            .signature_manifest(&tag)
            .await?
            .map(|m| m.layers)
            .unwrap_or_default();
        let payload_digest = sha256_digest(payload);
        layers.retain(|l| l.digest != payload_digest);
        layers.push(OciDescriptor {
            media_type: MEDIA_TYPE.to_owned(),
            digest: payload_digest.clone(),
            size: payload.len() as i64,
            annotations: Some(BTreeMap::from([(
                SIGNATURE_ANNOTATION.to_owned(),
                signature.to_owned(),
            )])),
            ..OciDescriptor::default()
        });
        // An image config as go-containerregistry writes one for cosign: the layers' digests.
        let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "", "os": "", "config": {},
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        }))
        .unwrap_or_default();
        let manifest = OciImageManifest {
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
            config: OciDescriptor {
                media_type: "application/vnd.oci.image.config.v1+json".to_owned(),
                digest: sha256_digest(&config),
                size: config.len() as i64,
                ..OciDescriptor::default()
            },
            layers,
            ..OciImageManifest::default()
        };
        self.client
            .store_auth_if_needed(tag.resolve_registry(), &self.auth)
            .await;
        self.client
            .push_blob(&tag, payload.to_vec(), &payload_digest)
            .await
            .map_err(registry_err)?;
        self.client
            .push_blob(&tag, config, &manifest.config.digest)
            .await
            .map_err(registry_err)?;
        let body = serde_json::to_vec(&manifest).unwrap_or_default();
        let content_type = http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE);
        self.client
            .push_manifest_raw(&tag, body, content_type)
            .await
            .map_err(registry_err)?;
        Ok(name)
    }

    /// The manifest of a signature tag; `None` when the registry does not know the tag.
    async fn signature_manifest(&self, tag: &Reference) -> Result<Option<OciImageManifest>> {
        match self.client.pull_image_manifest(tag, &self.auth).await {
            Ok((manifest, _)) => Ok(Some(manifest)),
            Err(e) if is_unknown(&e) => Ok(None),
            Err(source) => Err(OciError::Registry {
                reference: tag.whole(),
                source,
            }),
        }
    }
}

/// Whether the registry says it has no such manifest.
pub(super) fn is_unknown(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            e.code == OciErrorCode::ManifestUnknown || e.code == OciErrorCode::NameUnknown
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        _ => false,
    }
}
