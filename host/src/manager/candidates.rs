//! Candidate versions: checked against what they would replace, resumed where a restart left them, handed to their kind's controller.
//!
//! A source's candidates (`crate::hotload::CandidateEvents`) are followed by [`Candidates::follow`]:
//! the directory's are the files of `DIR/candidates/` (`DIR/candidates/FILE.wasm` is the
//! candidate of `DIR/FILE.wasm`), the cluster's the Plugins' `spec.candidate`
//! (`Plugin/NAME/candidate` is the candidate of `Plugin/NAME`).
//!
//! A refusal made here (the candidate would replace another kind or plugin) or by its rollout
//! (rolled back, now or before a restart) goes back to the source
//! (`crate::hotload::RefusedAfterLoad`), which shows it as it shows a refusal before the load:
//! for the cluster, on the Plugin's status (`CandidateLoaded=False`).
//!
//! A replica that does not lead proposes its candidates too (with the phase kept then), but
//! keeps no phase; when it comes to lead, its controllers take the kept one
//! (`crate::rollout::resume`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::controllers::ControllersView;
use super::runnables::{Runnables, Stage};
use crate::chain::Chain;
use crate::fence::Fence;
use crate::hotload::{Catalog, KindKey, PluginEvent, RefusedAfterLoad};
use crate::plugin::Plugin;
use crate::rollout::{
    CandidateRefusal, Phase, PhaseStore, RolledBack, Rollout, RolloutConfig, StoredPhase,
};

/// Hands candidates to controllers and keeps the refusals for the listing.
#[derive(Clone)]
pub(super) struct Candidates {
    pub(super) catalog: Catalog,
    pub(super) view: ControllersView,
    pub(super) store: PhaseStore,
    pub(super) config: RolloutConfig,
    /// Whether this replica leads: only a leader keeps a new candidate's first phase.
    pub(super) gate: Fence,
    /// Why the candidate of a serving file was refused, by serving file.
    pub(super) refused: Arc<RwLock<BTreeMap<PathBuf, String>>>,
    /// Told each time a candidate is handed to its controller.
    proposed: Arc<watch::Sender<()>>,
    /// Where the candidates' refusals after their load go back to (the source following them).
    refused_after_load: Option<UnboundedSender<RefusedAfterLoad>>,
}

impl Candidates {
    /// Candidates of what `catalog` lists and `view`'s controllers serve, their phases kept in
    /// `store` while `gate` (leadership) is open.
    pub(super) fn new(
        catalog: &Catalog,
        view: &ControllersView,
        config: RolloutConfig,
        store: PhaseStore,
        gate: Fence,
    ) -> Self {
        Self {
            catalog: catalog.clone(),
            view: view.clone(),
            store,
            config,
            gate,
            refused: Arc::default(),
            proposed: Arc::new(watch::channel(()).0),
            refused_after_load: None,
        }
    }

    /// Rolls `plugin` (from `file`) out as the candidate of what `serving` serves, resuming the
    /// phase kept for the same bytes; a refusal is kept for the listing.
    pub(super) async fn propose(
        &self,
        serving: &Path,
        file: PathBuf,
        plugin: Plugin,
    ) -> Result<(), CandidateRefusal> {
        let sha256 = plugin.sha256().to_owned();
        let result = self.try_propose(serving, file.clone(), plugin).await;
        if let Err(e) = &result
            && !matches!(e, CandidateRefusal::NoServing(_))
        {
            let source = self.refused_after_load.as_ref();
            refuse_after_load(source, &file, &sha256, (e.reason(), e.to_string()));
        }
        let mut refused = self.refused.write().unwrap_or_else(PoisonError::into_inner);
        match &result {
            Ok(()) => refused.remove(serving),
            Err(e) => refused.insert(serving.to_path_buf(), e.to_string()),
        };
        result
    }

    async fn try_propose(
        &self,
        serving: &Path,
        file: PathBuf,
        plugin: Plugin,
    ) -> Result<(), CandidateRefusal> {
        let shown = serving.display().to_string();
        let row = self
            .catalog
            .rows()
            .into_iter()
            .find(|r| r.file == serving)
            .ok_or_else(|| CandidateRefusal::NoServing(shown.clone()))?;
        let info = plugin.info();
        let claimed = KindKey::of(info).to_string();
        if claimed != row.kind {
            return Err(CandidateRefusal::OtherKind {
                claimed,
                file: shown,
                serving: row.kind,
            });
        }
        if info.name != row.name {
            return Err(CandidateRefusal::OtherPlugin {
                claimed: info.name.clone(),
                serving: row.name,
            });
        }
        // The serving bytes themselves are a valid candidate: their comparison must find nothing.
        let sha = plugin.sha256().to_owned();
        let controller = self
            .view
            .rollouts(&row.kind)
            .ok_or(CandidateRefusal::NoServing(shown))?;
        if controller.candidate_sha256().as_deref() == Some(sha.as_str()) {
            return Ok(());
        }
        let kept = match self.store.load(&info.name).await {
            Ok(kept) => kept.filter(|k| k.sha256 == sha),
            Err(e) => {
                tracing::warn!(error = %Chain(&e), "starting the candidate afresh");
                None
            }
        };
        let phase = kept
            .as_ref()
            .map_or_else(|| self.config.first(), |k| k.phase.clone());
        // A standby's first phase is not kept: the leader keeps its own, and this replica takes
        // the kept one when it comes to lead.
        if kept.is_none() && self.gate.allows() {
            let stored = StoredPhase {
                sha256: sha.clone(),
                version: info.version.clone(),
                phase: phase.clone(),
                paused: false,
            };
            if let Err(e) = self.store.save(&info.name, &stored).await {
                tracing::warn!(error = %Chain(&e), "the rollout phase was not kept");
            }
        }
        if let Phase::RolledBack { reason } = &phase {
            let message = format!("was rolled back before: {reason}");
            let source = self.refused_after_load.as_ref();
            refuse_after_load(source, &file, &sha, ("RolledBack", message));
        }
        // Only the way back to the source is kept: the rollout does not hold the candidates.
        let source = self.refused_after_load.clone();
        let (candidate, sha256) = (file.clone(), sha.clone());
        let rolled_back: RolledBack = Box::new(move |reason| {
            let message = format!("rolled back: {reason}");
            refuse_after_load(
                source.as_ref(),
                &candidate,
                &sha256,
                ("RolledBack", message),
            );
        });
        let rollout = Rollout::new(
            self.config.clone(),
            format!("{}@{}", row.name, row.version),
            (file, info.version.clone(), sha),
            phase,
        )
        .on_rolled_back(rolled_back);
        rollout.set_paused(kept.is_some_and(|k| k.paused));
        controller.propose(
            Arc::new(plugin),
            Arc::new(rollout),
            Some(self.store.clone()),
        );
        self.proposed.send_replace(());
        Ok(())
    }

    /// Adds the runnables that carry out operators' requests and, with a source of candidates,
    /// propose its candidates.
    pub(super) fn start(
        &self,
        runnables: &mut Runnables,
        source: Option<crate::hotload::CandidateEvents<Plugin>>,
    ) {
        let requests = self.clone();
        runnables.always(Stage::Beside, "rollout requests", move |stop| {
            requests.follow_requests(stop)
        });
        if let Some(source) = source {
            let candidates = self.clone();
            runnables.always(Stage::Beside, "candidates", move |stop| {
                candidates.follow(source, stop)
            });
        }
    }

    /// Hears of each candidate handed to its controller from now on.
    pub(super) fn proposals(&self) -> watch::Receiver<()> {
        self.proposed.subscribe()
    }

    /// The candidate of `serving` went away.
    pub(super) fn withdraw(&self, serving: &Path) {
        self.refused
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(serving);
        if let Some(row) = self.catalog.rows().into_iter().find(|r| r.file == serving)
            && let Some(controller) = self.view.rollouts(&row.kind)
        {
            controller.withdraw();
        }
    }

    /// Follows a source's candidates until `stop`: a candidate whose serving file is not served yet (the host is starting)
    /// is proposed again each time a controller starts, until it is.
    pub(super) async fn follow(
        mut self,
        source: crate::hotload::CandidateEvents<Plugin>,
        stop: CancellationToken,
    ) {
        let crate::hotload::CandidateEvents {
            mut events,
            serving_of,
            refused_after_load,
        } = source;
        self.refused_after_load = refused_after_load;
        let mut pending: BTreeMap<PathBuf, (PathBuf, Plugin)> = BTreeMap::new();
        let mut started = self.view.changes();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                Ok(()) = started.changed() => {}
                event = events.recv() => match event {
                    Some(PluginEvent::Added { file, plugin } | PluginEvent::Replaced { file, new: plugin, .. }) => {
                        pending.insert(serving_of(&file), (file, plugin));
                    }
                    Some(PluginEvent::Removed { file, .. }) => {
                        let serving = serving_of(&file);
                        pending.remove(&serving);
                        self.withdraw(&serving);
                    }
                    Some(PluginEvent::Refused { file, reason }) => {
                        let message = match reason {
                            crate::hotload::FileRefusal::Invalid(m) => m,
                            crate::hotload::FileRefusal::Conflict { kind, serving } => {
                                format!("another candidate, {}, claims {kind}", serving.display())
                            }
                            unverified @ crate::hotload::FileRefusal::Unverified { .. } => {
                                unverified.to_string()
                            }
                        };
                        tracing::warn!(candidate = %file.display(), reason = %message, "candidate refused");
                        self.refused
                            .write()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(serving_of(&file), CandidateRefusal::Load(message).to_string());
                    }
                    // The source stops only when the host does.
                    None => {
                        stop.cancelled().await;
                        return;
                    }
                },
            }
            let mut done = Vec::new();
            for (serving, (file, plugin)) in &pending {
                match self.propose(serving, file.clone(), plugin.clone()).await {
                    Err(CandidateRefusal::NoServing(_)) => {}
                    Err(e) => {
                        tracing::warn!(candidate = %file.display(), reason = %e, "candidate refused");
                        done.push(serving.clone());
                    }
                    Ok(()) => done.push(serving.clone()),
                }
            }
            for serving in done {
                pending.remove(&serving);
            }
        }
    }
}

/// Sends the refusal of candidate `file` (component `sha256`) back to `source`, if the source
/// takes refusals back.
fn refuse_after_load(
    source: Option<&UnboundedSender<RefusedAfterLoad>>,
    file: &Path,
    sha256: &str,
    (reason, message): (&'static str, String),
) {
    let Some(source) = source else {
        return;
    };
    let refused = RefusedAfterLoad {
        file: file.to_path_buf(),
        sha256: sha256.to_owned(),
        reason,
        message,
    };
    // The source stops only with the host: a refusal sent then has nobody to show it to.
    let _ = source.send(refused);
}
