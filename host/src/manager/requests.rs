//! Operators' rollout requests (`weir rollout promote|pause|resume|abort`), carried out by the leader.
//!
//! Every replica follows the rollout ConfigMaps of its namespace (`crate::rollout::store`) and
//! keeps the requests not carried out yet; the leading one carries each out on the candidate
//! of the plugin it names, keeps the phase that results and answers. A request for a plugin
//! whose candidate is not in place (a restart: it comes back a little later) waits for it up
//! to [`crate::rollout::RolloutConfig::resume_within`], then is refused with the reason. A
//! replica that does not lead carries out nothing; when it comes to lead, it carries out what
//! is still asked. Waiting requests are looked at again when something they wait for happens
//! (leadership turns, a controller starts, a candidate is proposed, a wait runs out), not on a
//! clock.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use super::candidates::Candidates;
use crate::chain::Chain;
use crate::rollout::Request;
use crate::rollout::store::{Kept, ROLLOUT_LABEL};

/// A request seen and not carried out yet.
struct Pending {
    request: Request,
    /// When this replica first saw it.
    since: Instant,
}

/// The requests of every plugin, as the watch shows them.
#[derive(Default)]
struct Requests {
    pending: BTreeMap<String, Pending>,
    /// Plugins whose request was answered here, until the watch shows the ConfigMap without
    /// it: an older event still carrying it must not ask again.
    answered: BTreeSet<String>,
    /// During a (re)list, the plugins it showed so far: at its end, requests of rollout
    /// ConfigMaps deleted while the watch was down are forgotten.
    relisted: Option<BTreeSet<String>>,
}

impl Requests {
    fn seen(&mut self, cm: &ConfigMap) {
        let Some(plugin) = cm.labels().get(ROLLOUT_LABEL).cloned() else {
            return;
        };
        match Kept::of(cm).request {
            None => {
                self.answered.remove(&plugin);
                self.pending.remove(&plugin);
            }
            Some(_) if self.answered.contains(&plugin) => {}
            Some(request) => {
                let same = self
                    .pending
                    .get(&plugin)
                    .is_some_and(|p| p.request == request);
                if !same {
                    let since = Instant::now();
                    self.pending.insert(plugin, Pending { request, since });
                }
            }
        }
    }

    fn relist_started(&mut self) {
        self.relisted = Some(BTreeSet::new());
    }

    fn relisted(&mut self, cm: &ConfigMap) {
        if let (Some(seen), Some(plugin)) = (&mut self.relisted, cm.labels().get(ROLLOUT_LABEL)) {
            seen.insert(plugin.clone());
        }
        self.seen(cm);
    }

    fn relist_done(&mut self) {
        if let Some(present) = self.relisted.take() {
            self.pending.retain(|p, _| present.contains(p));
            self.answered.retain(|p| present.contains(p));
        }
    }

    fn gone(&mut self, cm: &ConfigMap) {
        if let Some(plugin) = cm.labels().get(ROLLOUT_LABEL) {
            self.pending.remove(plugin);
            self.answered.remove(plugin);
        }
    }
}

impl Candidates {
    /// Follows the rollout ConfigMaps until `stop`, carrying requests out while this replica
    /// leads.
    pub(super) async fn follow_requests(self, stop: CancellationToken) {
        let config = watcher::Config::default().labels(ROLLOUT_LABEL);
        let mut events = watcher(self.store.api().clone(), config)
            .default_backoff()
            .boxed();
        let mut requests = Requests::default();
        let (mut proposed, mut started) = (self.proposals(), self.view.changes());
        loop {
            // While leading, a request waiting for its candidate is refused when its wait runs out.
            let due = self
                .gate
                .allows()
                .then(|| {
                    requests
                        .pending
                        .values()
                        .map(|p| p.since + self.config.resume_within)
                        .min()
                })
                .flatten();
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.gate.turned() => {}
                Ok(()) = proposed.changed() => {}
                Ok(()) = started.changed() => {}
                () = tokio::time::sleep_until(due.unwrap_or_else(Instant::now).into()), if due.is_some() => {}
                event = events.next() => match event {
                    Some(Ok(watcher::Event::Apply(cm))) => requests.seen(&cm),
                    Some(Ok(watcher::Event::Delete(cm))) => requests.gone(&cm),
                    Some(Ok(watcher::Event::Init)) => requests.relist_started(),
                    Some(Ok(watcher::Event::InitApply(cm))) => requests.relisted(&cm),
                    Some(Ok(watcher::Event::InitDone)) => requests.relist_done(),
                    Some(Err(e)) => tracing::warn!(error = %Chain(&e), "watching rollout requests failed; retrying"),
                    None => return,
                },
            }
            if !self.gate.allows() {
                continue;
            }
            let plugins: Vec<String> = requests.pending.keys().cloned().collect();
            for plugin in plugins {
                if self.carry_out(&plugin, &requests).await {
                    requests.pending.remove(&plugin);
                    requests.answered.insert(plugin);
                }
            }
        }
    }

    /// Carries out `plugin`'s pending request, or refuses it; `false` while it waits for the
    /// candidate.
    async fn carry_out(&self, plugin: &str, requests: &Requests) -> bool {
        let Some(pending) = requests.pending.get(plugin) else {
            return false;
        };
        let controller = self
            .catalog
            .rows()
            .into_iter()
            .find(|r| r.name == plugin)
            .and_then(|row| self.view.rollouts(&row.kind));
        let outcome = match controller {
            Some(c) if c.candidate_sha256().is_some() => c.steer(pending.request).await,
            _ if pending.since.elapsed() < self.config.resume_within => return false,
            Some(_) => Err("no candidate is being rolled out".to_owned()),
            None => Err(format!("no plugin {plugin} is served")),
        };
        let refusal = match &outcome {
            Ok(phase) => {
                tracing::info!(plugin, request = pending.request.as_str(), %phase, "rollout request carried out");
                None
            }
            Err(why) => {
                tracing::warn!(plugin, request = pending.request.as_str(), reason = %why, "rollout request refused");
                Some(why.as_str())
            }
        };
        // Not carried out twice when the answer is not written: the command times out instead.
        if let Err(e) = self.store.answered(plugin, pending.request, refusal).await {
            tracing::warn!(plugin, error = %Chain(&e), "the rollout request's answer was not written");
        }
        true
    }
}
