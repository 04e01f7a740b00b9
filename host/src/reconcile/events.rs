//! Publishes Events on parents, a repeat of a recent one as that Event's series, remembering each by a hash.
//!
//! kube's `Recorder` does the same, but keeps every Event it sent, whole, for six minutes and
//! scans them all at each publish: with one Event per parent that is kilobytes per parent and a
//! pass over all of them per Event. [`Events`] keeps, per Event sent in the last six minutes, a
//! hash of what makes a repeat (the kube `Recorder`'s key: type, action, reason, reporter and the
//! object regarded) and what a repeat needs (the Event's name and namespace, its count), and
//! forgets expired ones at most every [`SWEEP_EVERY`].

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::runtime::sweeps::Sweeps;

/// How long a sent Event is remembered: a repeat within it is counted in its series.
const REMEMBERED: Duration = Duration::from_secs(6 * 60);
/// Expired entries are forgotten at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// One Event to publish.
#[derive(Clone, Copy, Debug)]
pub struct Note<'a> {
    /// A Warning rather than a Normal Event.
    pub warning: bool,
    /// Why (`Reconciled`, `ReconcileFailed`, ...).
    pub reason: &'a str,
    /// What was done.
    pub action: &'a str,
    /// The human-readable text.
    pub note: &'a str,
}

/// What is remembered of one sent Event.
struct Sent {
    name: Box<str>,
    namespace: Box<str>,
    count: i32,
    at: Instant,
}

#[derive(Default)]
struct State {
    sent: HashMap<u64, Sent>,
    swept: Sweeps,
}

/// The Events of one reporter (see the module documentation).
pub struct Events {
    client: Client,
    controller: String,
    instance: String,
    hasher: RandomState,
    state: Mutex<State>,
}

impl Events {
    /// Events reported by `controller` (e.g. `weir/blog`) from `instance`.
    pub fn new(client: Client, controller: String, instance: String) -> Self {
        Self {
            client,
            controller,
            instance,
            hasher: RandomState::new(),
            state: Mutex::default(),
        }
    }

    fn key(&self, note: &Note<'_>, regarding: &ObjectReference) -> u64 {
        let r = regarding;
        self.hasher.hash_one((
            note.warning,
            note.action,
            note.reason,
            [
                &r.api_version,
                &r.kind,
                &r.name,
                &r.namespace,
                &r.uid,
                &r.resource_version,
                &r.field_path,
            ],
        ))
    }

    /// Publishes `note` on `regarding`: a new Event, or the next count of the same Event's
    /// series when it was sent in the last six minutes.
    pub async fn publish(
        &self,
        note: &Note<'_>,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let key = self.key(note, regarding);
        let now = Instant::now();
        let repeat = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.sweep(now);
            state.sent.get(&key).map(|s| {
                (
                    s.name.clone(),
                    s.namespace.clone(),
                    s.count.saturating_add(1),
                )
            })
        };
        let stamp = Timestamp::now();
        let (name, namespace, count) = match repeat {
            Some((name, namespace, count)) => {
                let series = EventSeries {
                    count,
                    last_observed_time: MicroTime(stamp),
                };
                let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
                let patch = Patch::Merge(json!({ "series": series }));
                api.patch(&name, &PatchParams::default(), &patch).await?;
                (name, namespace, count)
            }
            None => {
                let event = self.event(note, regarding, stamp);
                let namespace = event.metadata.namespace.clone().unwrap_or_default();
                let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
                api.create(&PostParams::default(), &event).await?;
                let name = event.metadata.name.unwrap_or_default();
                (name.into(), namespace.into(), 1)
            }
        };
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.sent.insert(
            key,
            Sent {
                name,
                namespace,
                count,
                at: now,
            },
        );
        Ok(())
    }

    /// A new Event: named after the object and the time, in its namespace (`default` for a
    /// cluster-scoped object), as kube's `Recorder` makes it.
    fn event(&self, note: &Note<'_>, regarding: &ObjectReference, stamp: Timestamp) -> Event {
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or(&self.controller),
            stamp.as_nanosecond()
        );
        Event {
            action: Some(note.action.into()),
            reason: Some(note.reason.into()),
            note: Some(note.note.into()),
            event_time: Some(MicroTime(stamp)),
            regarding: Some(regarding.clone()),
            metadata: ObjectMeta {
                namespace: Some(namespace),
                name: Some(name),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            type_: Some(if note.warning { "Warning" } else { "Normal" }.into()),
            ..Event::default()
        }
    }
}

impl State {
    /// Forgets Events older than [`REMEMBERED`], at most once per [`SWEEP_EVERY`].
    fn sweep(&mut self, now: Instant) {
        if !self.swept.due(now, SWEEP_EVERY) {
            return;
        }
        self.sent
            .retain(|_, s| now.saturating_duration_since(s.at) < REMEMBERED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(at: Instant) -> Sent {
        Sent {
            name: "b.1".into(),
            namespace: "default".into(),
            count: 1,
            at,
        }
    }

    #[test]
    fn an_event_is_forgotten_six_minutes_after_it_was_sent() {
        let mut state = State::default();
        let start = Instant::now();
        state.sent.insert(1, sent(start));
        state.sweep(start + Duration::from_secs(5 * 60));
        state
            .sent
            .insert(2, sent(start + Duration::from_secs(5 * 60)));
        assert_eq!(state.sent.len(), 2);
        state.sweep(start + REMEMBERED);
        assert!(!state.sent.contains_key(&1));
        assert!(state.sent.contains_key(&2));
    }

    #[test]
    fn expired_events_are_looked_for_at_most_every_ten_seconds() {
        let mut state = State::default();
        let start = Instant::now();
        state.sent.insert(1, sent(start));
        let almost = start + REMEMBERED - Duration::from_secs(1);
        state.sweep(almost);
        state.sweep(start + REMEMBERED);
        assert_eq!(state.sent.len(), 1, "swept a second ago");
        state.sweep(almost + SWEEP_EVERY);
        assert!(state.sent.is_empty());
    }
}
