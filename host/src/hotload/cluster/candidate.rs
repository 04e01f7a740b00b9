//! A Plugin's `spec.candidate`: fetched and loaded as the spec is, proposed on the candidates' channel, or refused until its spec changes (or, when the registry could not check its tag, until it does).

use tracing::{info, warn};

use super::Run;
use crate::chain::Chain;
use crate::cluster::fetch::TagCheck;
use crate::hotload::Loader;
use crate::hotload::dir::{FileRefusal, Loaded, PluginEvent};

impl<L: Loader + Sync> Run<L> {
    /// Fetches and loads the Plugin's `spec.candidate` and proposes it (or withdraws the one
    /// proposed before, when the spec no longer names one).
    pub(super) async fn attempt_candidate(&mut self, name: &str) {
        let file = self.candidate_file_of(name);
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        let wanted = entry.object.spec.candidate.clone();
        entry.candidate_attempted.clone_from(&wanted);
        let Some(wanted) = wanted else {
            if let Some((plugin, _)) = entry.candidate.take() {
                info!(plugin = name, "candidate withdrawn");
                let _ = self.candidates.send(PluginEvent::Removed { file, plugin });
            }
            return;
        };
        let mut object = entry.object.clone();
        let Some((source, digest)) = wanted.resolve(&object.spec.source) else {
            let why = "spec.candidate names no component: give `oci`, `configMap`, or a `digest` in the repository of `source.oci`";
            return self.refuse_candidate(name, format!("Plugin {name}: {why}"));
        };
        // Fetched as a Plugin of its own, never from what the serving version's status remembers.
        (object.spec.source, object.spec.digest, object.status) = (source, digest, None);
        let fetched = match self.fetch(&object).await {
            Ok(fetched) => fetched,
            Err(e) => {
                return self.refuse_candidate(name, format!("Plugin {name}: {}", Chain(&e)));
            }
        };
        if let TagCheck::Unchecked(why) = &fetched.tag {
            // Tried again on the backoff, as the serving version's unchecked tag is.
            if let Some(entry) = self.entries.get_mut(name) {
                entry.candidate_attempted = None;
                entry.retrying = true;
            }
            let why = format!(
                "Plugin {name}: the registry could not be reached to check the candidate's tag \
                 ({why}); a candidate rolls out only on a tag the registry confirmed"
            );
            return self.refuse_candidate(name, why);
        }
        let proposed = self.entries.get(name).and_then(|e| e.candidate.as_ref());
        if proposed.is_some_and(|(_, digest)| *digest == fetched.digest) {
            return;
        }
        // Never shadowed, canaried or promoted unless it verifies (or the level is audit).
        if let Err(refusal) = self.check_signatures(name, &object, &fetched).await {
            return self.refuse_candidate(name, refusal.message);
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
                let message = format!("Plugin {name} ({}): {}", fetched.digest, Chain(&e));
                return self.refuse_candidate(name, message);
            }
            Err(e) => {
                let message = format!("Plugin {name} ({}): the load panicked: {e}", fetched.digest);
                return self.refuse_candidate(name, message);
            }
        };
        info!(plugin = name, digest = %fetched.digest, version = %plugin.info().version, "candidate loaded");
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
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

    pub(super) fn refuse_candidate(&self, name: &str, message: String) {
        warn!(
            plugin = name,
            "candidate refused: {message}; the rollout in place (if any) goes on"
        );
        let _ = self.candidates.send(PluginEvent::Refused {
            file: self.candidate_file_of(name),
            reason: FileRefusal::Invalid(message),
        });
    }
}
