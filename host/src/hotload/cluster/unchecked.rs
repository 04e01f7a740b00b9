//! A version served while the registry could not say what its tag names: the version it
//! replaced is kept to come back to, and it is withdrawn when the registry answers.
//!
//! `crate::cluster::fetch` serves a Plugin's pinned digest from the local store when the
//! registry gives no answer ([`TagCheck::Unchecked`]); the Plugin is then retried on the
//! queue's backoff. The first answer decides as an answer at once would have: the tag names
//! the pin (the version stays, `TagChecked` turns `True`), or it does not, or the registry
//! refuses (the version is refused and withdrawn: the checked version it replaced serves again,
//! or, after a restart, none does, exactly as on a host that found the registry up).

use tracing::warn;

use super::{Entry, Run};
use crate::cluster::fetch::TagCheck;
use crate::cluster::verdict::Signature;
use crate::hotload::Loader;
use crate::hotload::arbiter::KindKey;
use crate::hotload::dir::{Loaded, PluginEvent};

/// A version that served before one whose tag could not be checked.
pub(super) struct Fallback<P> {
    plugin: P,
    digest: String,
    tag: TagCheck,
    signature: Option<Signature>,
}

impl<L: Loader + Sync> Run<L> {
    /// Records what a fetch of the version serving learned of its tag; once checked, nothing
    /// needs to be come back to.
    pub(super) fn tag_learned(entry: &mut Entry<L::Plugin>, tag: TagCheck) {
        if !matches!(tag, TagCheck::Unchecked(_)) {
            entry.fallback = None;
        }
        entry.tag = tag;
    }

    /// Before `previous` is replaced by a version of `kind` whose fetch learned `tag`: keeps
    /// `previous` to come back to when the new version's tag is unchecked and `previous`'s was
    /// not (a second unchecked swap keeps the first one's fallback).
    pub(super) fn keep_fallback(
        entry: &mut Entry<L::Plugin>,
        previous: Option<&(L::Plugin, String)>,
        kind: &KindKey,
        tag: &TagCheck,
    ) {
        if !matches!(tag, TagCheck::Unchecked(_)) {
            entry.fallback = None;
            return;
        }
        if matches!(entry.tag, TagCheck::Unchecked(_)) {
            return;
        }
        entry.fallback = previous
            .filter(|(plugin, _)| KindKey::of(plugin.info()) == *kind)
            .map(|(plugin, digest)| Fallback {
                plugin: plugin.clone(),
                digest: digest.clone(),
                tag: entry.tag.clone(),
                signature: entry.signature.clone(),
            });
    }

    /// The registry answered about the current spec and did not confirm its pin: a version of
    /// that pin serving on an unchecked tag is withdrawn (its fallback serves again, if any).
    pub(super) fn withdraw_unchecked(&mut self, name: &str) {
        let file = self.file_of(name);
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        let pinned = entry.object.spec.digest.as_deref();
        let provisional = matches!(entry.tag, TagCheck::Unchecked(_))
            && entry.serving.as_ref().map(|(_, d)| d.as_str()) == pinned;
        if !provisional {
            return;
        }
        let Some((plugin, digest)) = entry.serving.take() else {
            return;
        };
        match entry.fallback.take() {
            Some(fallback) => {
                warn!(plugin = name, %digest, back_to = %fallback.digest,
                    "the registry answered: the version served on an unchecked tag is withdrawn, \
                     and the version before it serves again");
                entry.tag = fallback.tag;
                entry.signature = fallback.signature;
                entry.serving = Some((fallback.plugin.clone(), fallback.digest));
                self.emit(PluginEvent::Replaced {
                    file,
                    old: plugin,
                    new: fallback.plugin,
                });
            }
            None => {
                warn!(plugin = name, %digest,
                    "the registry answered: the version served on an unchecked tag is withdrawn");
                entry.tag = TagCheck::NotAsked;
                entry.signature = None;
                self.release(&KindKey::of(plugin.info()));
                self.emit(PluginEvent::Removed { file, plugin });
            }
        }
    }
}
