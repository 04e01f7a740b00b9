//! A Plugin's `spec.candidate`: fetched, verified and loaded as the spec is, proposed on the candidates' channel, or refused (with its reason on the Plugin's status) until its spec changes, or, when the refusal may pass, until a retry on the backoff.
//!
//! A candidate refused after its load (by the host's checks of what it would replace, or by the
//! rollout rolling it back) comes back as a [`RefusedAfterLoad`] and is shown the same way, by
//! [`CandidateAttempt::Dropped`]: every refusal of a candidate reaches its Plugin's status.

use tracing::{info, warn};

use super::{Run, key_of};
use crate::chain::Chain;
use crate::cluster::candidate_status::CandidateAttempt;
use crate::cluster::fetch::TagCheck;
use crate::hotload::dir::{FileRefusal, Loaded, PluginEvent};
use crate::hotload::{Loader, RefusedAfterLoad};
use crate::runtime::Cause;

impl<L: Loader + Sync> Run<L> {
    /// Fetches, verifies and loads the Plugin's `spec.candidate` and proposes it (or withdraws
    /// the one proposed before, when the spec no longer names one).
    pub(super) async fn attempt_candidate(&mut self, name: &str) {
        let file = self.candidate_file_of(name);
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        let wanted = entry.object.spec.candidate.clone();
        entry.candidate_attempted.clone_from(&wanted);
        let Some(wanted) = wanted else {
            entry.candidate_status = None;
            if let Some((plugin, _)) = entry.candidate.take() {
                info!(plugin = name, "candidate withdrawn");
                let _ = self.candidates.send(PluginEvent::Removed { file, plugin });
            }
            return;
        };
        entry.candidate_status = Some(CandidateAttempt::Pending);
        let mut object = entry.object.clone();
        let Some((source, digest)) = wanted.resolve(&object.spec.source) else {
            let why = "spec.candidate names no component: give `oci`, `configMap`, or a `digest` in the repository of `source.oci`";
            let message = format!("Plugin {name}: {why}");
            return self.refuse_candidate(name, "InvalidSource", message, false);
        };
        // Fetched as a Plugin of its own, never from what the serving version's status remembers.
        (object.spec.source, object.spec.digest, object.status) = (source, digest, None);
        let fetched = match self.fetch(&object).await {
            Ok(fetched) => fetched,
            Err(e) => {
                let message = format!("Plugin {name}: {}", Chain(&e));
                return self.refuse_candidate(name, e.reason(), message, e.is_transient());
            }
        };
        if let TagCheck::Unchecked(why) = &fetched.tag {
            // Tried again on the backoff, as the serving version's unchecked tag is.
            let why = format!(
                "Plugin {name}: the registry could not be reached to check the candidate's tag \
                 ({why}); a candidate rolls out only on a tag the registry confirmed"
            );
            return self.refuse_candidate(name, "RegistryUnreachable", why, true);
        }
        // The one gate of every load: never shadowed, canaried or promoted unless it verifies
        // (or the level is audit, and its status says why it does not).
        let signature = match self.check_signatures(name, &object, &fetched).await {
            Ok(signature) => signature,
            Err(refusal) => {
                let (reason, message) = (refusal.reason, refusal.message);
                return self.refuse_candidate(name, reason, message, refusal.transient);
            }
        };
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        if let Some((plugin, digest)) = &entry.candidate
            && *digest == fetched.digest
        {
            entry.candidate_status = Some(CandidateAttempt::Proposed {
                version: described(plugin),
                digest: fetched.digest,
                signature,
            });
            return;
        }
        let (loader, path, sha256) = (
            self.loader.clone(),
            fetched.component.path.clone(),
            fetched.component.sha256.clone(),
        );
        let loaded =
            tokio::task::spawn_blocking(move || loader.load_verified(&path, &sha256)).await;
        let plugin = match loaded {
            Ok(Ok(plugin)) => plugin,
            Ok(Err(e)) => {
                let reason = L::reason(&e);
                let message = format!("Plugin {name} ({}): {}", fetched.digest, Chain(&e));
                return self.refuse_candidate(name, reason, message, false);
            }
            Err(e) => {
                let message = format!("Plugin {name} ({}): the load panicked: {e}", fetched.digest);
                return self.refuse_candidate(name, "LoadFailed", message, false);
            }
        };
        info!(plugin = name, digest = %fetched.digest, version = %plugin.info().version, "candidate loaded");
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        entry.candidate_status = Some(CandidateAttempt::Proposed {
            digest: fetched.digest.clone(),
            version: described(&plugin),
            signature,
        });
        let event = match entry.candidate.replace((plugin.clone(), fetched.digest)) {
            Some((old, _)) => PluginEvent::Replaced {
                file,
                old,
                new: plugin,
            },
            None => PluginEvent::Added { file, plugin },
        };
        let _ = self.candidates.send(event);
    }

    /// Refuses the candidate: the log, the Plugin's status and the candidates' channel (the
    /// `/plugins` listing) say why. A `transient` refusal (a registry or signature that may
    /// come later) is tried again on the queue's backoff; the others wait for a new spec.
    pub(super) fn refuse_candidate(
        &mut self,
        name: &str,
        reason: &'static str,
        message: String,
        transient: bool,
    ) {
        warn!(
            plugin = name,
            reason, "candidate refused: {message}; the rollout in place (if any) goes on"
        );
        if let Some(entry) = self.entries.get_mut(name) {
            entry.candidate_status = Some(CandidateAttempt::Refused {
                reason,
                message: message.clone(),
            });
            if transient {
                entry.candidate_attempted = None;
                entry.retrying = true;
            }
        }
        let _ = self.candidates.send(PluginEvent::Refused {
            file: self.candidate_file_of(name),
            reason: FileRefusal::Invalid(message),
        });
    }
}

impl<L: Loader + Sync> Run<L> {
    /// Shows `refused` on the status of the Plugin whose candidate it is, if that candidate is
    /// still the one proposed (the same component); a refusal of a replaced one is ignored.
    pub(super) fn candidate_refused_after_load(&mut self, refused: RefusedAfterLoad) {
        let Some(name) = self
            .entries
            .keys()
            .find(|name| self.candidate_file_of(name) == refused.file)
            .cloned()
        else {
            return;
        };
        let Some(entry) = self.entries.get_mut(&name) else {
            return;
        };
        let Some((plugin, digest)) = &entry.candidate else {
            return;
        };
        if plugin.sha256() != refused.sha256 {
            return;
        }
        let version = described(plugin);
        warn!(plugin = %name, candidate = %version, %digest, reason = refused.reason, "candidate refused after its load: {}", refused.message);
        entry.candidate_status = Some(CandidateAttempt::Dropped {
            digest: digest.clone(),
            version,
            reason: refused.reason,
            message: refused.message,
        });
        // Its turn brings the status up to date; the spec is not attempted again.
        self.queue.add(key_of(&name), Cause::Outside);
    }
}

/// `NAME@VERSION`, from the plugin's `describe()`.
fn described<P: Loaded>(plugin: &P) -> String {
    format!("{}@{}", plugin.info().name, plugin.info().version)
}
