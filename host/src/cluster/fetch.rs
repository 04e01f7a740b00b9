//! One Plugin's component onto local disk, with the same answer on every replica whatever its
//! local store holds: the store saves downloads, never a question the registry answers.
//!
//! The rules, in order:
//! 1. The digest the reference names **now**: its own `@sha256:…` (content-addressed: no
//!    request), or what its tag points at, asked on every fetch (one manifest HEAD request, no
//!    download). A component stored earlier never stands in for a tag, so a tag moved since is
//!    seen by a host that stored the old content exactly as by a fresh one.
//! 2. A pin (`spec.digest`, or `@sha256:` in the reference; both must agree) that differs from
//!    that digest is refused: the tag moved, or the pin is wrong.
//! 3. A registry that gives no answer to that question (refused connection, timeout, a proxy's
//!    502/503/504) is no refusal when the pinned digest is in the local store: that content is
//!    served, marked [`TagCheck::Unchecked`], so that the caller says so and asks again later.
//!    Any answer the registry does give (another digest, no such tag, unauthorized) decides as
//!    in rule 2; without a pin, or without the pinned content stored, no answer is a failure
//!    (there is nothing the host may serve).
//! 4. That digest in the local store: served from disk (a restart, a second replica sharing
//!    the volume).
//! 5. Otherwise pulled (manifest checked against the digest, the layer against the manifest),
//!    stored, and served.
//!
//! A ConfigMap is read the same way on every fetch (its `binaryData` is both the question and
//! the download), and its content is checked against the pin before the store is looked at.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, Client};
use sha2::{Digest, Sha256};

use super::blobs::{Blobs, StoredComponent};
use super::oci::{
    Credentials, OciError, Registry, credentials_from_docker_config, parse_reference,
};
use super::resource::{ConfigMapKey, ObjectReference};

/// Why a Plugin's component could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The registry side failed: bad reference, unreachable, refused, not a component artifact,
    /// a digest that differs from the pin.
    #[error(transparent)]
    Oci(#[from] OciError),
    /// `spec.digest` and the reference's `@sha256:` disagree.
    #[error("spec.digest {spec} and the reference's digest {reference} disagree")]
    PinsDisagree {
        /// `spec.digest`.
        spec: String,
        /// The reference's `@sha256:…`.
        reference: String,
    },
    /// The pull Secret could not be read or has no credentials for the registry.
    #[error("pull Secret {namespace}/{name}: {reason}")]
    PullSecret {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The spec names neither or both of `source.oci` and `source.configMap`.
    #[error("spec.source must name exactly one of oci and configMap")]
    Source,
    /// A TenantPlugin names an object in another namespace than its own, which the host will
    /// not read for it (a pull Secret, a ConfigMap).
    #[error(
        "a TenantPlugin of namespace {namespace} names only objects of its namespace, not {beyond}"
    )]
    OutsideNamespace {
        /// The TenantPlugin's namespace.
        namespace: String,
        /// What it names elsewhere (`pullSecret weir`, `; `-separated).
        beyond: String,
    },
    /// The ConfigMap could not be read or has no such `binaryData` key.
    #[error("ConfigMap {namespace}/{name}: {reason}")]
    ConfigMap {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The component could not be written to the local store.
    #[error("cannot store the component of {digest} on local disk")]
    Store {
        /// The manifest digest.
        digest: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl FetchError {
    /// The CamelCase reason a Plugin's `Loaded` condition gives for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            FetchError::Oci(OciError::Reference { .. }) | FetchError::Source => "InvalidSource",
            FetchError::OutsideNamespace { .. } => "OutsideNamespace",
            FetchError::Oci(OciError::Registry { .. }) => "PullFailed",
            FetchError::Oci(OciError::NotWasm { .. }) => "NotAComponent",
            FetchError::Oci(OciError::DigestMismatch { .. }) | FetchError::PinsDisagree { .. } => {
                "DigestMismatch"
            }
            FetchError::PullSecret { .. } => "PullSecretInvalid",
            FetchError::ConfigMap { .. } => "ConfigMapUnreadable",
            FetchError::Store { .. } => "CacheFailed",
        }
    }

    /// Whether the registry gave no answer at all (see [`OciError::is_unreachable`]): what it
    /// refused is an answer, and so is every other failure here.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, FetchError::Oci(e) if e.is_unreachable())
    }

    /// Whether trying again later may succeed with the same spec (an unreachable registry, a
    /// pull Secret or ConfigMap not created yet, a full disk); the others wait for a new spec.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            FetchError::Oci(OciError::Registry { .. })
                | FetchError::PullSecret { .. }
                | FetchError::ConfigMap { .. }
                | FetchError::Store { .. }
        )
    }
}

/// A component on local disk and the manifest digest it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The manifest digest (`sha256:…`).
    pub digest: String,
    /// The component on disk.
    pub component: StoredComponent,
    /// Whether it was downloaded now (`false`: it was on disk already).
    pub pulled: bool,
    /// Whether the registry was asked what the reference's tag names, and what came of it.
    pub tag: TagCheck,
}

/// What a fetch learned of the reference's tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TagCheck {
    /// Nothing to ask: the reference names a digest, or the source is a ConfigMap.
    NotAsked,
    /// The registry answered, and its answer is the digest fetched.
    Checked,
    /// The registry could not be reached: the pinned digest was served from the local store
    /// without knowing whether the tag still names it. The text says what failed.
    Unchecked(String),
}

/// Fetches the component `reference` (pinned to `pinned`, if given) names; see the module docs.
pub async fn fetch(
    blobs: &Blobs,
    reference: &str,
    pinned: Option<&str>,
    credentials: &Credentials,
) -> Result<Fetched, FetchError> {
    let parsed = parse_reference(reference)?;
    let pinned = match (pinned, parsed.digest()) {
        (Some(spec), Some(in_ref)) if spec != in_ref => {
            return Err(FetchError::PinsDisagree {
                spec: spec.to_owned(),
                reference: in_ref.to_owned(),
            });
        }
        (spec, in_ref) => spec.or(in_ref).map(str::to_owned),
    };
    let registry = Registry::new(&parsed, credentials);
    let tag = if parsed.digest().is_some() {
        TagCheck::NotAsked
    } else {
        TagCheck::Checked
    };
    let digest = match registry.resolve(&parsed).await {
        Ok(digest) => digest,
        Err(e) if e.is_unreachable() => return stored_while_unreachable(blobs, pinned, e),
        Err(e) => return Err(e.into()),
    };
    if let Some(pin) = &pinned
        && *pin != digest
    {
        return Err(OciError::DigestMismatch {
            reference: parsed.whole(),
            pinned: pin.clone(),
            found: digest,
        }
        .into());
    }
    if let Some(component) = blobs.get(&digest) {
        return Ok(Fetched {
            digest,
            component,
            pulled: false,
            tag,
        });
    }
    let pulled = registry.pull(&parsed, &digest).await?;
    let component = blobs
        .put(&digest, &pulled.component_sha256, &pulled.component)
        .map_err(|source| FetchError::Store {
            digest: digest.clone(),
            source,
        })?;
    Ok(Fetched {
        digest,
        component,
        pulled: true,
        tag,
    })
}

/// The pinned component from the local store when the registry gives no answer to what the
/// tag names (rule 3 of the module docs); without a pin, or without it stored, the failure.
fn stored_while_unreachable(
    blobs: &Blobs,
    pinned: Option<String>,
    unreachable: OciError,
) -> Result<Fetched, FetchError> {
    let Some((digest, component)) =
        pinned.and_then(|pin| blobs.get(&pin).map(|component| (pin, component)))
    else {
        return Err(unreachable.into());
    };
    Ok(Fetched {
        digest,
        component,
        pulled: false,
        tag: TagCheck::Unchecked(crate::chain::Chain(&unreachable).to_string()),
    })
}

/// Reads a component from a ConfigMap's `binaryData` key; its digest is the component's own
/// sha256 (`sha256:…`), checked against `pinned` (a stored pin does not spare the read).
pub async fn fetch_config_map(
    client: &Client,
    blobs: &Blobs,
    key: &ConfigMapKey,
    pinned: Option<&str>,
) -> Result<Fetched, FetchError> {
    let fail = |reason: String| FetchError::ConfigMap {
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        reason,
    };
    let found = Api::<ConfigMap>::namespaced(client.clone(), &key.namespace)
        .get(&key.name)
        .await
        .map_err(|e| fail(crate::chain::Chain(&e).to_string()))?;
    let bytes = found
        .binary_data
        .as_ref()
        .and_then(|data| data.get(&key.key))
        .ok_or_else(|| fail(format!("it has no binaryData key {:?}", key.key)))?;
    let sha256 = hex::encode(Sha256::digest(&bytes.0));
    let digest = format!("sha256:{sha256}");
    if let Some(pin) = pinned
        && pin != digest
    {
        return Err(OciError::DigestMismatch {
            reference: format!("configmap {}/{} key {}", key.namespace, key.name, key.key),
            pinned: pin.to_owned(),
            found: digest,
        }
        .into());
    }
    if let Some(component) = blobs.get(&digest) {
        return Ok(Fetched {
            digest,
            component,
            pulled: false,
            tag: TagCheck::NotAsked,
        });
    }
    let component = blobs
        .put(&digest, &sha256, &bytes.0)
        .map_err(|source| FetchError::Store {
            digest: digest.clone(),
            source,
        })?;
    Ok(Fetched {
        digest,
        component,
        pulled: true,
        tag: TagCheck::NotAsked,
    })
}

/// The credentials for `reference`'s registry in the `kubernetes.io/dockerconfigjson` Secret
/// `secret` names.
pub async fn pull_credentials(
    client: &Client,
    secret: &ObjectReference,
    reference: &str,
) -> Result<Credentials, FetchError> {
    let fail = |reason: String| FetchError::PullSecret {
        namespace: secret.namespace.clone(),
        name: secret.name.clone(),
        reason,
    };
    let registry = parse_reference(reference)?.resolve_registry().to_owned();
    let found = Api::<Secret>::namespaced(client.clone(), &secret.namespace)
        .get(&secret.name)
        .await
        .map_err(|e| fail(crate::chain::Chain(&e).to_string()))?;
    let json = found
        .data
        .as_ref()
        .and_then(|data| data.get(".dockerconfigjson"))
        .ok_or_else(|| fail("it has no .dockerconfigjson key".to_owned()))?;
    credentials_from_docker_config(&json.0, &registry).map_err(fail)
}
