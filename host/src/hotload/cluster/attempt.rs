//! One attempt at a Plugin's spec: fetch, load, then serve it or refuse it (retried on the queue's backoff when the failure is transient), and the status that says which.

use std::time::Instant;

use tracing::{info, warn};

use super::{CONFLICT, Run};
use crate::chain::Chain;
use crate::cluster::fetch::{
    FetchError, Fetched, TagCheck, fetch, fetch_config_map, pull_credentials,
};
use crate::cluster::oci::parse_reference;
use crate::cluster::status::{self, Attempt, Checks, Serving};
use crate::cluster::verdict::Signature;
use crate::cluster::{Credentials, PluginResource, PluginSpec};
use crate::hotload::arbiter::KindKey;
use crate::hotload::dir::{FileRefusal, Loaded, PluginEvent};
use crate::hotload::{Loader, Result};

impl<L: Loader + Sync> Run<L> {
    pub(super) async fn attempt(&mut self, name: &str) {
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        let object = entry.object.clone();
        entry.attempted = Some(object.spec.clone());
        entry.attempt = Attempt::Pending;
        entry.retrying = false;
        self.arbiter.stop_waiting(name);
        let fetched = match self.fetch(&object).await {
            Ok(fetched) => fetched,
            Err(e) => {
                if !e.is_unreachable() {
                    // An answer: a version served on an unchecked tag has it now.
                    self.withdraw_unchecked(name);
                }
                let message = format!("Plugin {name}: {}", Chain(&e));
                return self.refuse(name, e.reason(), message, e.is_transient());
            }
        };
        if fetched.pulled {
            info!(plugin = name, digest = %fetched.digest, "component pulled and stored");
        }
        if let TagCheck::Unchecked(why) = &fetched.tag {
            warn!(plugin = name, digest = %fetched.digest,
                "the registry could not be reached to check the tag ({why}); the pinned digest \
                 serves from the local store, and the tag is asked about again on the backoff");
        }
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        // Asked again on the queue's backoff until the registry answers.
        entry.retrying = matches!(fetched.tag, TagCheck::Unchecked(_));
        if entry
            .serving
            .as_ref()
            .is_some_and(|(_, digest)| *digest == fetched.digest)
        {
            entry.attempt = Attempt::Loaded;
            Self::tag_learned(entry, fetched.tag);
            return;
        }
        let signature = match self.check_signatures(name, &object, &fetched).await {
            Ok(signature) => signature,
            Err(refusal) => {
                return self.refuse(name, refusal.reason, refusal.message, refusal.transient);
            }
        };
        let (loader, path, sha256) = (
            self.loader.clone(),
            fetched.component.path.clone(),
            fetched.component.sha256.clone(),
        );
        self.catalog.set_loading(Some(path.clone()));
        let started = Instant::now();
        let loaded =
            tokio::task::spawn_blocking(move || loader.load_verified(&path, &sha256)).await;
        self.catalog.set_loading(None);
        self.metrics.loaded_in(started.elapsed().as_secs_f64());
        match loaded {
            Ok(Ok(plugin)) => {
                info!(plugin = name, digest = %fetched.digest, took_ms = started.elapsed().as_millis(),
                    "component loaded");
                self.serve(name, plugin, fetched.digest, fetched.tag, signature);
            }
            Ok(Err(e)) => {
                let reason = L::reason(&e);
                let message = format!("Plugin {name} ({}): {}", fetched.digest, Chain(&e));
                self.refuse(name, reason, message, reason == "DiscoveryFailed");
            }
            Err(e) => {
                let message = format!("Plugin {name} ({}): the load panicked: {e}", fetched.digest);
                self.refuse(name, "LoadFailed", message, false);
            }
        }
    }

    /// The Plugin's component on local disk; see the module docs for when the registry is asked.
    pub(super) async fn fetch(&self, object: &PluginResource) -> Result<Fetched, FetchError> {
        let spec = &object.spec;
        self.objects.confine(spec)?;
        // The digest this very spec's tag resolved to (by this replica or another), when no
        // digest is pinned: the tag is resolved once, and every replica serves that content.
        let resolved = object
            .status
            .as_ref()
            .filter(|_| spec.digest.is_none())
            .filter(|s| s.observed_generation == object.metadata.generation)
            .filter(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Loaded" && c.status == "True")
            })
            .and_then(|s| s.digest.clone());
        match (&spec.source.oci, &spec.source.config_map) {
            (Some(reference), None) => {
                let parsed = parse_reference(reference)?;
                let reference = match resolved {
                    Some(digest) if parsed.digest().is_none() => {
                        parsed.clone_with_digest(digest).whole()
                    }
                    _ => reference.clone(),
                };
                let credentials = self.credentials(spec, &reference).await?;
                fetch(
                    &self.blobs,
                    &reference,
                    spec.digest.as_deref(),
                    &credentials,
                )
                .await
            }
            (None, Some(key)) => {
                fetch_config_map(&self.client, &self.blobs, key, spec.digest.as_deref()).await
            }
            _ => Err(FetchError::Source),
        }
    }

    /// The credentials of the Plugin's pull Secret for `reference`'s registry (anonymous
    /// without one).
    pub(super) async fn credentials(
        &self,
        spec: &PluginSpec,
        reference: &str,
    ) -> Result<Credentials, FetchError> {
        match &spec.pull_secret {
            Some(secret) => pull_credentials(&self.client, secret, reference).await,
            None => Ok(Credentials::Anonymous),
        }
    }

    pub(super) fn serve(
        &mut self,
        name: &str,
        plugin: L::Plugin,
        digest: String,
        tag: TagCheck,
        signature: Option<Signature>,
    ) {
        let kind = KindKey::of(plugin.info());
        if let Err(owner) = self.arbiter.claim(&kind, name) {
            let message = format!(
                "Plugin {name}: {}@{} serves {kind}, which Plugin {owner} serves already",
                plugin.info().name,
                plugin.info().version
            );
            let serving = self.file_of(&owner);
            self.refuse(name, CONFLICT, message, false);
            self.metrics.refused("conflict");
            // The log line names both; the event tells the host nothing changed.
            warn!(plugin = name, %kind, serving = %serving.display(), "refused: kind already served");
            let _ = self.events.send(PluginEvent::Refused {
                file: self.file_of(name),
                reason: FileRefusal::Conflict { kind, serving },
            });
            return;
        }
        let file = self.file_of(name);
        let previous = self.entries.get_mut(name).and_then(|entry| {
            let previous = entry.serving.take();
            Self::keep_fallback(entry, previous.as_ref(), &kind, &tag);
            previous
        });
        let event = match previous {
            Some((old, _)) if KindKey::of(old.info()) == kind => PluginEvent::Replaced {
                file,
                old,
                new: plugin.clone(),
            },
            Some((old, _)) => {
                self.release(&KindKey::of(old.info()));
                self.emit(PluginEvent::Removed {
                    file: file.clone(),
                    plugin: old,
                });
                PluginEvent::Added {
                    file,
                    plugin: plugin.clone(),
                }
            }
            None => PluginEvent::Added {
                file,
                plugin: plugin.clone(),
            },
        };
        if let Some(entry) = self.entries.get_mut(name) {
            entry.serving = Some((plugin, digest));
            entry.tag = tag;
            entry.signature = signature;
            entry.attempt = Attempt::Loaded;
        }
        self.emit(event);
    }

    pub(super) fn refuse(
        &mut self,
        name: &str,
        reason: &'static str,
        message: String,
        transient: bool,
    ) {
        warn!(
            plugin = name,
            reason, "refused: {message}; what served before keeps serving"
        );
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        entry.retrying = transient;
        entry.attempt = Attempt::Refused {
            reason,
            message: message.clone(),
        };
        if reason != CONFLICT {
            self.metrics.refused("invalid");
            // Nothing changes for the host; the activity feed hears of it.
            let _ = self.events.send(PluginEvent::Refused {
                file: self.file_of(name),
                reason: FileRefusal::Invalid(message),
            });
        }
    }

    pub(super) fn emit(&mut self, event: PluginEvent<L::Plugin>) {
        self.catalog.apply(&event);
        let served = self.catalog.len();
        match &event {
            PluginEvent::Added { file, plugin } => {
                self.metrics.changed("added", served);
                info!(plugin = %plugin.info().name, version = %plugin.info().version,
                    kind = %KindKey::of(plugin.info()), source = %file.display(), "plugin added");
            }
            PluginEvent::Replaced { file, old, new } => {
                self.metrics.changed("replaced", served);
                info!(plugin = %new.info().name, from = %old.info().version, to = %new.info().version,
                    source = %file.display(), sha256 = %new.sha256(), "plugin replaced");
            }
            PluginEvent::Removed { file, plugin } => {
                self.metrics.changed("removed", served);
                info!(plugin = %plugin.info().name, source = %file.display(),
                    "plugin removed; its controller stops and its children are left as they are");
            }
            PluginEvent::Refused { .. } => {}
        }
        // A dropped receiver is noticed by the loop.
        let _ = self.events.send(event);
    }

    /// Writes the Plugin's status if this replica leads and it changed.
    pub(super) async fn sync_status(&mut self, name: &str) {
        if !self.leading.allows() {
            return;
        }
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        let fill = self.objects.fill();
        let serving = entry.serving.as_ref().map(|(plugin, digest)| Serving {
            digest: digest.clone(),
            name: plugin.info().name.clone(),
            version: plugin.info().version.clone(),
            kind: KindKey::of(plugin.info()).to_string(),
        });
        let desired = status::desired(
            entry.object.metadata.generation,
            serving.as_ref(),
            &entry.attempt,
            Checks {
                tag: &entry.tag,
                signature: entry.signature.as_ref(),
                candidate: entry.candidate_status.as_ref(),
                cache: fill.as_ref(),
            },
            entry.object.status.as_ref(),
        );
        match self.objects.write_status(&entry.object, &desired).await {
            Ok(true) => entry.object.status = Some(desired),
            Ok(false) => {}
            // The next event or retry writes it again.
            Err(e) => warn!(plugin = name, error = %Chain(&e), "cannot write the Plugin's status"),
        }
    }
}
