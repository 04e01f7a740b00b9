//! Components as OCI artifacts: pushed and pulled in the WebAssembly layout, verified by digest.
//!
//! The layout is the WebAssembly OCI artifact convention (CNCF TAG Runtime's
//! `wasm-oci-artifact`, also written by `wkg` and `oras`): an image manifest whose config has
//! media type [`CONFIG_MEDIA_TYPE`] and whose one layer is the component, media type
//! [`LAYER_MEDIA_TYPE`]. A digest here is always the **manifest's** (`sha256:…`), the one
//! `weir push` prints and `registry/repo@sha256:…` names; the registry client checks the
//! manifest against it and the layer against the manifest, so the component is what was pinned.
//!
//! Registries on the loopback interface (`localhost:PORT`, `127.0.0.1:PORT`) are spoken to in
//! plain HTTP, as docker does; every other registry in HTTPS (rustls with ring, as kube).

use std::collections::BTreeMap;

use oci_client::client::{ClientConfig, ClientProtocol, ImageLayer};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::{Digest, Sha256};

/// Media type of the config of a WebAssembly artifact.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// Media type of its one layer, the component.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Older layer media type some tools still write (wasm-to-oci); accepted on pull.
const LEGACY_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";

/// Why a push or a pull failed; every variant names the reference.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference is not `registry/repository[:tag][@sha256:…]`.
    #[error("{reference:?} is not an OCI reference")]
    Reference {
        /// The reference as written.
        reference: String,
        /// Why it does not parse.
        #[source]
        source: oci_client::ParseError,
    },
    /// The registry could not be reached, refused the credentials, or answered an error.
    #[error("registry error for {reference}")]
    Registry {
        /// The reference.
        reference: String,
        /// The client's error.
        #[source]
        source: OciDistributionError,
    },
    /// The artifact is not one WebAssembly component (another config or layer media type).
    #[error("{reference} is not a WebAssembly component artifact: {reason}")]
    NotWasm {
        /// The reference.
        reference: String,
        /// What it is instead.
        reason: String,
    },
    /// The digest the registry serves for the reference is not the one pinned.
    #[error("{reference} has digest {found}, not the pinned {pinned}")]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// The digest pinned (`spec.digest`, or `@sha256:` in the reference).
        pinned: String,
        /// The digest the registry serves.
        found: String,
    },
}

/// Result of this module.
pub type Result<T, E = OciError> = std::result::Result<T, E>;

impl OciError {
    /// Whether the registry gave no answer: it could not be connected to, did not answer in
    /// time, or a proxy in front of it said it is down (502, 503, 504). Anything else it says
    /// (unauthorized, no such tag, another digest) is an answer.
    pub fn is_unreachable(&self) -> bool {
        let OciError::Registry { source, .. } = self else {
            return false;
        };
        match source {
            OciDistributionError::RequestError(e) => {
                e.is_connect() || e.is_timeout() || e.is_request()
            }
            OciDistributionError::ServerError { code, .. } => matches!(code, 502..=504),
            _ => false,
        }
    }
}

/// A component pulled from a registry.
#[derive(Debug)]
pub struct Pulled {
    /// The manifest's digest (`sha256:…`).
    pub digest: String,
    /// The component's own digest, as hex (the layer's; the precompiled cache's key).
    pub component_sha256: String,
    /// The component.
    pub component: Vec<u8>,
}

/// Credentials for one registry.
#[derive(Clone, Default)]
pub enum Credentials {
    /// No credentials.
    #[default]
    Anonymous,
    /// HTTP basic authentication (or the token exchange that starts with it).
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
        }
    }
}

impl Credentials {
    fn auth(&self) -> RegistryAuth {
        match self {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
        }
    }
}

/// Parses an OCI reference; a reference without tag or digest means `:latest`.
pub fn parse_reference(reference: &str) -> Result<Reference> {
    reference
        .parse::<Reference>()
        .map_err(|source| OciError::Reference {
            reference: reference.to_owned(),
            source,
        })
}

/// Pushes and pulls components, with one set of credentials (the registry client keeps the
/// first credentials it is given for a registry, so other credentials need another `Registry`).
pub struct Registry {
    pub(super) client: Client,
    pub(super) auth: RegistryAuth,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

impl Registry {
    /// A client for `reference`'s registry (only whether it is on loopback matters: see the
    /// module docs), authenticating with `credentials`.
    pub fn new(reference: &Reference, credentials: &Credentials) -> Registry {
        // reqwest is built without a default TLS provider (its default, aws-lc, would be a
        // second crypto library beside kube's ring): make ring the process default. An
        // error means a provider is installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = reference.resolve_registry().to_owned();
        let protocol = if is_loopback(&registry) {
            ClientProtocol::HttpsExcept(vec![registry])
        } else {
            ClientProtocol::Https
        };
        Registry {
            client: Client::new(ClientConfig {
                protocol,
                connect_timeout: Some(std::time::Duration::from_secs(10)),
                read_timeout: Some(std::time::Duration::from_secs(60)),
                ..ClientConfig::default()
            }),
            auth: credentials.auth(),
        }
    }

    /// Pushes `component` to `reference` in the WebAssembly layout; returns the manifest's
    /// digest. Pushing the same bytes again gives the same digest (the config records no time).
    pub async fn push(&self, component: &[u8], reference: &Reference) -> Result<String> {
        let name = reference.whole();
        let registry_err = |source| OciError::Registry {
            reference: name.clone(),
            source,
        };
        let layer_digest = sha256_digest(component);
        let config = serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer_digest],
        });
        let config = serde_json::to_vec(&config).unwrap_or_default();
        let layer = ImageLayer::new(component.to_vec(), LAYER_MEDIA_TYPE.to_owned(), None);
        let manifest = OciImageManifest {
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
            config: OciDescriptor {
                media_type: CONFIG_MEDIA_TYPE.to_owned(),
                digest: sha256_digest(&config),
                size: config.len() as i64,
                ..OciDescriptor::default()
            },
            layers: vec![OciDescriptor {
                media_type: LAYER_MEDIA_TYPE.to_owned(),
                digest: layer_digest.clone(),
                size: component.len() as i64,
                ..OciDescriptor::default()
            }],
            ..OciImageManifest::default()
        };
        let body = serde_json::to_vec(&manifest).unwrap_or_default();
        let digest = sha256_digest(&body);

        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
        self.client
            .push_blob(reference, layer.data, &layer_digest)
            .await
            .map_err(registry_err)?;
        self.client
            .push_blob(reference, config, &manifest.config.digest)
            .await
            .map_err(registry_err)?;
        let content_type = http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE);
        self.client
            .push_manifest_raw(reference, body, content_type)
            .await
            .map_err(registry_err)?;
        Ok(digest)
    }

    /// The digest `reference` names now: its own `@sha256:…`, or what the registry says its
    /// tag points at (one HEAD request).
    pub async fn resolve(&self, reference: &Reference) -> Result<String> {
        if let Some(digest) = reference.digest() {
            return Ok(digest.to_owned());
        }
        self.client
            .fetch_manifest_digest(reference, &self.auth)
            .await
            .map_err(|source| OciError::Registry {
                reference: reference.whole(),
                source,
            })
    }

    /// Pulls the component of the manifest with this `digest` from `reference`'s repository.
    pub async fn pull(&self, reference: &Reference, digest: &str) -> Result<Pulled> {
        let pinned = reference.clone_with_digest(digest.to_owned());
        let name = pinned.whole();
        let registry_err = |source| OciError::Registry {
            reference: name.clone(),
            source,
        };
        // Checks the manifest's bytes against `digest`.
        let (manifest, _) = self
            .client
            .pull_image_manifest(&pinned, &self.auth)
            .await
            .map_err(registry_err)?;
        let layer = wasm_layer(&manifest).map_err(|reason| OciError::NotWasm {
            reference: name.clone(),
            reason,
        })?;
        let mut component = Vec::with_capacity(usize::try_from(layer.size).unwrap_or(0));
        // Checks the bytes against the layer's digest.
        self.client
            .pull_blob(&pinned, layer, &mut component)
            .await
            .map_err(registry_err)?;
        let component_sha256 = hex::encode(Sha256::digest(&component));
        Ok(Pulled {
            digest: digest.to_owned(),
            component_sha256,
            component,
        })
    }
}

/// The one component layer of a WebAssembly artifact, or why there is none.
fn wasm_layer(manifest: &OciImageManifest) -> std::result::Result<&OciDescriptor, String> {
    let config = &manifest.config.media_type;
    if !config.starts_with("application/vnd.wasm.config.") {
        return Err(format!("its config has media type {config}"));
    }
    match manifest.layers.as_slice() {
        [layer]
            if layer.media_type == LAYER_MEDIA_TYPE
                || layer.media_type == LEGACY_LAYER_MEDIA_TYPE =>
        {
            Ok(layer)
        }
        [layer] => Err(format!("its layer has media type {}", layer.media_type)),
        layers => Err(format!("it has {} layers, not one", layers.len())),
    }
}

pub(super) fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// `localhost:PORT`, `127.x.x.x:PORT`, `[::1]:PORT`.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => registry,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Reads the credentials for `registry` from a `kubernetes.io/dockerconfigjson` document
/// (`{"auths": {"REGISTRY": {"username": …, "password": …} | {"auth": base64("user:pass")}}}`).
pub fn credentials_from_docker_config(
    json: &[u8],
    registry: &str,
) -> std::result::Result<Credentials, String> {
    use base64::Engine as _;
    #[derive(serde::Deserialize)]
    struct DockerConfig {
        #[serde(default)]
        auths: BTreeMap<String, Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        username: Option<String>,
        password: Option<String>,
        auth: Option<String>,
    }
    let config: DockerConfig =
        serde_json::from_slice(json).map_err(|e| format!("not a docker config: {e}"))?;
    let entry = config
        .auths
        .iter()
        .find(|(key, _)| registry_of(key) == registry)
        .map(|(_, entry)| entry)
        .ok_or_else(|| format!("it has no entry for registry {registry}"))?;
    if let (Some(username), Some(password)) = (&entry.username, &entry.password) {
        return Ok(Credentials::Basic {
            username: username.clone(),
            password: password.clone(),
        });
    }
    let auth = entry
        .auth
        .as_deref()
        .ok_or_else(|| format!("its entry for {registry} has neither username nor auth"))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth)
        .map_err(|e| format!("its auth for {registry} is not base64: {e}"))?;
    let decoded =
        String::from_utf8(decoded).map_err(|_| format!("its auth for {registry} is not text"))?;
    let (username, password) = decoded
        .split_once(':')
        .ok_or_else(|| format!("its auth for {registry} is not user:password"))?;
    Ok(Credentials::Basic {
        username: username.to_owned(),
        password: password.to_owned(),
    })
}

/// `https://registry.example/v1/` → `registry.example`, as docker keys its config.
fn registry_of(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_registries_are_told_from_remote_ones() {
        assert!(is_loopback("localhost:5000"));
        assert!(is_loopback("127.0.0.1:41234"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("registry.example:5000"));
        assert!(!is_loopback("ghcr.io"));
    }

    #[test]
    fn docker_config_credentials_are_read_in_both_forms() {
        let plain = br#"{"auths":{"127.0.0.1:5000":{"username":"u","password":"p"}}}"#;
        let Credentials::Basic { username, password } =
            credentials_from_docker_config(plain, "127.0.0.1:5000").unwrap()
        else {
            panic!("anonymous")
        };
        assert_eq!((username.as_str(), password.as_str()), ("u", "p"));
        // "weir:s3cret:x" in base64: the password may hold a colon.
        let encoded = br#"{"auths":{"https://reg.example/v1/":{"auth":"d2VpcjpzM2NyZXQ6eA=="}}}"#;
        let Credentials::Basic { username, password } =
            credentials_from_docker_config(encoded, "reg.example").unwrap()
        else {
            panic!("anonymous")
        };
        assert_eq!((username.as_str(), password.as_str()), ("weir", "s3cret:x"));
        let missing = credentials_from_docker_config(plain, "other:5000").unwrap_err();
        assert!(
            missing.contains("no entry for registry other:5000"),
            "{missing}"
        );
    }

    #[test]
    fn only_one_wasm_layer_makes_a_component_artifact() {
        let layer = |media_type: &str| OciDescriptor {
            media_type: media_type.to_owned(),
            ..OciDescriptor::default()
        };
        let manifest = |layers| OciImageManifest {
            config: layer(CONFIG_MEDIA_TYPE),
            layers,
            ..OciImageManifest::default()
        };
        assert!(wasm_layer(&manifest(vec![layer(LAYER_MEDIA_TYPE)])).is_ok());
        let two = wasm_layer(&manifest(vec![layer(LAYER_MEDIA_TYPE); 2])).unwrap_err();
        assert_eq!(two, "it has 2 layers, not one");
        let tar = manifest(vec![layer("application/vnd.oci.image.layer.v1.tar")]);
        assert!(
            wasm_layer(&tar)
                .unwrap_err()
                .contains("layer has media type")
        );
    }
}
