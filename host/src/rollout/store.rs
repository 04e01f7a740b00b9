//! Where a rollout's phase is kept across restarts, and the Events that announce its moves.
//!
//! One ConfigMap per plugin, `weir-rollout-<plugin>`, in the host's namespace (the leader
//! lease's). A ConfigMap rather than the parents or the Lease: it is readable before any
//! controller runs, it is one object whatever the number of parents, `kubectl get cm` shows it,
//! and the host may already write ConfigMaps there (the Lease's namespace is the host's own). Only
//! the leader writes it (and its Events): the manager builds the store on the leader's fenced
//! client ([`crate::fence`]), so a standby's save is withheld unsent. The
//! Events of each move name this ConfigMap, so `kubectl describe cm weir-rollout-<plugin>` reads
//! as the rollout's history (with a Warning `NotResumed` when, after a restart, the candidate a
//! kept phase names did not come back in time and the serving version reconciled alone). When
//! the cluster `Plugin` resource exists, its status is the natural successor; the record's shape
//! stays.
//!
//! An operator steers a rollout through the same ConfigMap: `weir rollout promote|pause|resume|abort`
//! writes a `request` key ([`PhaseStore::ask`]); the leader carries it out on its candidate,
//! keeps the phase that results and removes the key ([`PhaseStore::answered`]), so the command
//! needs no address of the leader and works whichever replica leads. The ConfigMap carries the
//! label [`ROLLOUT_LABEL`] (the plugin's name), which the leader's watch selects on.

use std::str::FromStr;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};
use serde_json::json;

use super::Phase;
use crate::chain::Chain;

/// What an operator asks of a rollout in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// The candidate serves every parent now, whatever the phase.
    Promote,
    /// The phase stops stepping forward by itself (a failing candidate is still rolled back).
    Pause,
    /// The phase steps forward again.
    Resume,
    /// The candidate is dropped: the serving version answers every parent again, and the same
    /// bytes are not rolled out again (as after an automatic rollback).
    Abort,
}

impl Request {
    /// The word kept in the ConfigMap.
    pub fn as_str(self) -> &'static str {
        match self {
            Request::Promote => "promote",
            Request::Pause => "pause",
            Request::Resume => "resume",
            Request::Abort => "abort",
        }
    }
}

impl FromStr for Request {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "promote" => Request::Promote,
            "pause" => Request::Pause,
            "resume" => Request::Resume,
            "abort" => Request::Abort,
            other => return Err(format!("not a rollout request: {other}")),
        })
    }
}

/// How the leader's answer to a request it could not carry out begins.
pub const REFUSED: &str = "refused: ";

/// The label of every rollout ConfigMap; its value is the plugin's name.
pub const ROLLOUT_LABEL: &str = "weir.dev/rollout";

/// Why the phase could not be read or kept.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The API request failed.
    #[error("rollout state {namespace}/{name}")]
    Api {
        /// Namespace of the ConfigMap.
        namespace: String,
        /// Its name.
        name: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
}

/// A candidate's phase as kept in the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPhase {
    /// Hex sha256 of the candidate the phase is about.
    pub sha256: String,
    /// Its version.
    pub version: String,
    /// Where it stood.
    pub phase: Phase,
    /// Whether an operator paused it: the phase does not step forward by itself (a rollback
    /// still happens when the candidate fails more often than the serving version).
    pub paused: bool,
}

/// What the ConfigMap of one plugin's rollout holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// The phase the leader last kept, if any.
    pub phase: Option<StoredPhase>,
    /// An operator's request the leader has not carried out yet.
    pub request: Option<Request>,
    /// The leader's answer to the last request: `done`, or `refused: ` and why.
    pub answer: Option<String>,
}

impl Kept {
    /// Reads the ConfigMap's data; keys it does not know are ignored.
    pub fn of(cm: &ConfigMap) -> Self {
        let data = cm.data.clone().unwrap_or_default();
        let phase = data
            .get("phase")
            .and_then(|p| serde_json::from_str::<Phase>(p).ok());
        let phase = match (data.get("candidateSha256"), phase) {
            (Some(sha), Some(phase)) => Some(StoredPhase {
                sha256: sha.clone(),
                version: data.get("candidateVersion").cloned().unwrap_or_default(),
                phase,
                paused: data.get("paused").is_some_and(|p| p == "true"),
            }),
            _ => None,
        };
        let request = data.get("request").and_then(|r| r.parse().ok());
        let answer = data.get("answer").cloned();
        Self {
            phase,
            request,
            answer,
        }
    }
}

/// Reads and writes the phases of one host's rollouts.
#[derive(Clone)]
pub struct PhaseStore {
    api: Api<ConfigMap>,
    namespace: String,
    recorder: Recorder,
}

/// The ConfigMap keeping `plugin`'s rollout.
pub fn config_map_name(plugin: &str) -> String {
    format!("weir-rollout-{plugin}")
}

impl PhaseStore {
    /// A store in `namespace`; Events are reported as `weir/rollout` from `instance`.
    pub fn new(client: Client, namespace: &str, instance: &str) -> Self {
        let reporter = Reporter {
            controller: "weir/rollout".into(),
            instance: Some(instance.to_owned()),
        };
        Self {
            api: Api::namespaced(client.clone(), namespace),
            namespace: namespace.to_owned(),
            recorder: Recorder::new(client, reporter),
        }
    }

    fn error(&self, plugin: &str) -> impl FnOnce(kube::Error) -> StoreError {
        let (namespace, name) = (self.namespace.clone(), config_map_name(plugin));
        move |source| StoreError::Api {
            namespace,
            name,
            source,
        }
    }

    /// The namespace of the ConfigMaps.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The ConfigMaps of this store's namespace (for watching requests).
    pub fn api(&self) -> &Api<ConfigMap> {
        &self.api
    }

    /// The phase kept for `plugin`'s candidate, if any.
    pub async fn load(&self, plugin: &str) -> Result<Option<StoredPhase>, StoreError> {
        Ok(self.kept(plugin).await?.phase)
    }

    /// Everything kept for `plugin`: the phase and a request not carried out yet.
    pub async fn kept(&self, plugin: &str) -> Result<Kept, StoreError> {
        let cm = self
            .api
            .get_opt(&config_map_name(plugin))
            .await
            .map_err(self.error(plugin))?;
        Ok(cm.as_ref().map_or(
            Kept {
                phase: None,
                request: None,
                answer: None,
            },
            Kept::of,
        ))
    }

    /// Asks the leader to carry out `request` on `plugin`'s candidate (the operator's side).
    pub async fn ask(&self, plugin: &str, request: Request) -> Result<(), StoreError> {
        let patch = json!({
            "metadata": {"labels": {ROLLOUT_LABEL: plugin}},
            "data": {"request": request.as_str(), "answer": null},
        });
        self.api
            .patch(
                &config_map_name(plugin),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(self.error(plugin))?;
        Ok(())
    }

    /// Removes `plugin`'s request once it is carried out, or refused (`refusal` says why: in
    /// the `answer` key and a Warning Event).
    pub async fn answered(
        &self,
        plugin: &str,
        request: Request,
        refusal: Option<&str>,
    ) -> Result<(), StoreError> {
        let answer = refusal.map_or_else(|| "done".to_owned(), |why| format!("{REFUSED}{why}"));
        let patch = json!({"data": {"request": null, "answer": answer}});
        let written = self
            .api
            .patch(
                &config_map_name(plugin),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(self.error(plugin))?;
        if let Some(why) = refusal {
            let note = format!("{plugin}: {} refused: {why}", request.as_str());
            self.announce(plugin, &written.object_ref(&()), (true, "Refused"), &note)
                .await;
        }
        Ok(())
    }

    /// Keeps `stored` as `plugin`'s phase and announces it with an Event on the ConfigMap.
    pub async fn save(&self, plugin: &str, stored: &StoredPhase) -> Result<(), StoreError> {
        self.keep(plugin, stored, stored.phase.reason()).await
    }

    /// [`PhaseStore::save`], announced with the Event reason `reason` (`Paused`, `Resumed`).
    pub async fn keep(
        &self,
        plugin: &str,
        stored: &StoredPhase,
        reason: &str,
    ) -> Result<(), StoreError> {
        let name = config_map_name(plugin);
        let phase = serde_json::to_string(&stored.phase).unwrap_or_default();
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {
                "app.kubernetes.io/managed-by": "weir",
                ROLLOUT_LABEL: plugin,
            }},
            "data": {
                "plugin": plugin,
                "candidateSha256": stored.sha256,
                "candidateVersion": stored.version,
                "phase": phase,
                "paused": if stored.paused { "true" } else { "false" },
            },
        });
        let written = self
            .api
            .patch(
                &name,
                &PatchParams::apply("weir/rollout").force(),
                &Patch::Apply(&cm),
            )
            .await
            .map_err(self.error(plugin))?;
        let rolled_back = matches!(stored.phase, Phase::RolledBack { .. });
        let paused = if stored.paused { " (paused)" } else { "" };
        let note = format!("{plugin} {}: {}{paused}", stored.version, stored.phase);
        self.announce(
            plugin,
            &written.object_ref(&()),
            (rolled_back, reason),
            &note,
        )
        .await;
        Ok(())
    }

    /// Announces that the candidate `stored` names did not come back within `waited` after a
    /// restart: the serving version reconciles alone (a Warning Event `NotResumed`).
    pub async fn not_resumed(&self, plugin: &str, stored: &StoredPhase, waited: Duration) {
        let regarding = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            name: Some(config_map_name(plugin)),
            namespace: Some(self.namespace.clone()),
            ..ObjectReference::default()
        };
        let note = format!(
            "{plugin} {} ({}) was kept but not proposed again within {waited:?}: the serving version reconciles alone",
            stored.version, stored.phase
        );
        self.announce(plugin, &regarding, (true, "NotResumed"), &note)
            .await;
    }

    /// One Event about `plugin`'s rollout on `regarding`; `(warning, reason)`.
    async fn announce(
        &self,
        plugin: &str,
        regarding: &ObjectReference,
        (warning, reason): (bool, &str),
        note: &str,
    ) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            note: Some(crate::plugin::truncate(note, 1_024).into_owned()),
            action: "Rollout".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, regarding).await {
            tracing::warn!(plugin, error = %Chain(&e), "could not publish the rollout Event");
        }
    }
}
