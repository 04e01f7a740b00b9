//! A fetched component's signatures checked before it loads: the verdict kept beside the
//! store, else the registry's signatures (the `sha256-<hex>.sig` tag and the Sigstore bundles
//! referring to the artifact) held against the verification policy;
//! under `enforce` what does not verify is refused, under `audit` it loads and says why not.

use tracing::{info, warn};

use super::Run;
use crate::chain::Chain;
use crate::cluster::PluginResource;
use crate::cluster::fetch::Fetched;
use crate::cluster::oci::{Registry, parse_reference};
use crate::cluster::verdict::Signature;
use crate::hotload::Loader;
use crate::trust::{Level, Verdict, verify};

/// Why a component may not load: the Plugin's `Loaded` condition says it.
pub(super) struct Refusal {
    /// CamelCase reason (`Unsigned`, `SignatureUntrusted`, `SignatureUnavailable`).
    pub reason: &'static str,
    /// Why, naming the digest and each signature's fault.
    pub message: String,
    /// Whether asking again may change it (a signature pushed later, a registry back).
    pub transient: bool,
}

impl<L: Loader + Sync> Run<L> {
    /// Checks the signatures of `fetched`, the component of `object` (its spec, or its
    /// candidate's as a spec). `None` when the host has no verification policy.
    pub(super) async fn check_signatures(
        &self,
        name: &str,
        object: &PluginResource,
        fetched: &Fetched,
    ) -> Result<Option<Signature>, Refusal> {
        let Some(policy) = &self.verification else {
            return Ok(None);
        };
        let digest = &fetched.digest;
        if let Some(keys) = self.verdicts.get(digest, policy.fingerprint()) {
            return Ok(Some(Signature::Verified { keys }));
        }
        let (verdict, transient) = match self.read_signatures(object, digest).await {
            Ok(found) => {
                let verdict = verify(policy, digest, &found);
                let unsigned = matches!(
                    verdict,
                    Verdict::Refused {
                        reason: "Unsigned",
                        ..
                    }
                );
                (verdict, unsigned)
            }
            Err(message) => (
                Verdict::Refused {
                    reason: "SignatureUnavailable",
                    message,
                },
                true,
            ),
        };
        match verdict {
            Verdict::Verified { keys } => {
                info!(plugin = name, %digest, keys = %keys.join(", "), "signature verified");
                if let Err(e) = self.verdicts.put(digest, policy.fingerprint(), &keys) {
                    warn!(plugin = name, error = %e, "cannot keep the verdict beside the store");
                }
                Ok(Some(Signature::Verified { keys }))
            }
            Verdict::Refused { reason, message } => match policy.level.cluster {
                Level::Enforce => Err(Refusal {
                    reason,
                    message: format!("Plugin {name}: {message}"),
                    transient,
                }),
                Level::Audit => {
                    warn!(plugin = name, %digest, reason,
                        "served under audit, although it does not verify: {message}");
                    Ok(Some(Signature::Audited { reason, message }))
                }
            },
        }
    }

    /// The signatures stored beside the component's artifact; `Err` says why they could not be
    /// read. A ConfigMap's component has none.
    async fn read_signatures(
        &self,
        object: &PluginResource,
        digest: &str,
    ) -> Result<Vec<crate::trust::Found>, String> {
        let spec = &object.spec;
        let Some(reference) = &spec.source.oci else {
            return Ok(Vec::new());
        };
        let parsed = parse_reference(reference).map_err(|e| Chain(&e).to_string())?;
        let credentials = self
            .credentials(spec, reference)
            .await
            .map_err(|e| Chain(&e).to_string())?;
        Registry::new(&parsed, &credentials)
            .signatures(&parsed, digest)
            .await
            .map_err(|e| format!("the signatures of {digest} cannot be read: {}", Chain(&e)))
    }
}
