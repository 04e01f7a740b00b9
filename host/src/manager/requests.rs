//! Operators' rollout requests (`weir rollout promote|pause|resume|abort`), carried out by the leader.
//!
//! Every replica lists the rollout ConfigMaps of its namespace every second (`crate::rollout::store`) and
//! keeps the requests not carried out yet; the leading one carries each out on the candidate
//! of the plugin it names, keeps the phase that results and answers. A request for a plugin
//! whose candidate is not in place (a restart: it comes back a little later) waits for it up
//! to [`crate::rollout::RolloutConfig::resume_within`], then is refused with the reason. A
//! replica that does not lead carries out nothing; when it comes to lead, it carries out what
//! is still asked.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::ListParams;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::candidates::Candidates;
use crate::chain::Chain;
use crate::rollout::Request;
use crate::rollout::store::{Kept, ROLLOUT_LABEL};

/// How often requests waiting for their candidate or for leadership are looked at again.
const RETRY: Duration = Duration::from_millis(250);

/// How often the rollout ConfigMaps are listed for new requests.
const POLL: Duration = Duration::from_secs(1);

/// A request seen and not carried out yet.
struct Pending {
    request: Request,
    /// When this replica first saw it.
    since: Instant,
}

/// The requests of every plugin, as the last list showed them.
#[derive(Default)]
struct Requests {
    pending: BTreeMap<String, Pending>,
}

impl Requests {
    fn seen(&mut self, cm: &ConfigMap) {
        let Some(plugin) = cm.labels().get(ROLLOUT_LABEL).cloned() else {
            return;
        };
        match Kept::of(cm).request {
            None => {
                self.pending.remove(&plugin);
            }
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
}

impl Candidates {
    /// Follows the rollout ConfigMaps until `stop`, carrying requests out while `leading`
    /// (`None`: the only replica).
    pub(super) async fn follow_requests(
        self,
        leading: Option<watch::Receiver<bool>>,
        stop: CancellationToken,
    ) {
        // Listed every `POLL`, not watched, and the first list only after one `POLL`: with a
        // watch of these ConfigMaps, or a list of them, beside the informers' first lists at
        // start, the children a new parent's first reconcile created were often missing from the
        // cache in its next reconciles on the emulator (each wrote them again; cause not found
        // yet). A request waits a second at most.
        let params = ListParams::default().labels(ROLLOUT_LABEL);
        let mut requests = Requests::default();
        let mut tick = tokio::time::interval(RETRY);
        let mut listed_at = Instant::now();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            if listed_at.elapsed() >= POLL {
                listed_at = Instant::now();
                match self.store.api().list(&params).await {
                    Ok(list) => {
                        let present: BTreeSet<String> = list
                            .items
                            .iter()
                            .filter_map(|cm| cm.labels().get(ROLLOUT_LABEL).cloned())
                            .collect();
                        requests.pending.retain(|p, _| present.contains(p));
                        for cm in &list.items {
                            requests.seen(cm);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %Chain(&e), "listing rollout requests failed; retrying")
                    }
                }
            }
            if leading.as_ref().is_some_and(|l| !*l.borrow()) {
                continue;
            }
            let plugins: Vec<String> = requests.pending.keys().cloned().collect();
            for plugin in plugins {
                if self.carry_out(&plugin, &requests).await {
                    requests.pending.remove(&plugin);
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
            .and_then(|row| self.view.controller(&row.kind));
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
