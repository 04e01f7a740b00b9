//! The workers that take keys from the queue and reconcile them, and the periodic resync that
//! puts every cached parent back in it (the level-triggered safety net).

use std::sync::Arc;

use tokio::task::JoinSet;

use super::Controller;
use crate::runtime::Cause;

impl Controller {
    /// Enqueues every cached parent every `resync` period (the level-triggered safety net),
    /// until the task is dropped.
    pub async fn resync(self: Arc<Self>) {
        let period = self.parts.config.resync;
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            tick.tick().await;
            let keys = self.binding().cache.parents.keys();
            tracing::debug!(parents = keys.len(), "periodic resync");
            for key in keys {
                self.parts.queue.add(key, Cause::Resync);
            }
        }
    }

    /// Runs `workers` workers once the caches are synced, until [`Controller::shutdown`];
    /// in-flight reconciles finish. A reconcile dropped in flight instead (this future dropped:
    /// the workers abandoned when the lease is lost) leaves its key queued again
    /// ([`Queue::in_flight`](crate::runtime::Queue::in_flight)).
    pub async fn run_workers(self: Arc<Self>) {
        self.wait_synced().await;
        let mut workers = JoinSet::new();
        for _ in 0..self.parts.config.workers.max(1) {
            let this = self.clone();
            workers.spawn(async move {
                while let Some(key) = this.parts.queue.next().await {
                    let held = this.parts.queue.in_flight(key);
                    // A slot among the reconciles of all the host's plugins, taken after the
                    // key so that a plugin with nothing to do holds none, and given back when
                    // this reconcile ends. The semaphore is never closed.
                    let _slot = this.parts.config.reconcile_slots.acquire().await;
                    let route = this.route(held.key());
                    let depth = this.parts.queue.depth();
                    this.parts
                        .metrics
                        .queue_depth(&route.applied.info().name, depth);
                    this.reconcile(&route, held.key()).await;
                    held.settled();
                }
            });
        }
        while workers.join_next().await.is_some() {}
    }

    /// Stops handing out keys; `run_workers` returns once in-flight reconciles are done. Keys
    /// keep arriving and wait in the queue.
    pub fn shutdown(&self) {
        self.parts.queue.shutdown();
    }

    /// Hands out keys again after [`Controller::shutdown`] (leadership won back): what queued up
    /// meanwhile runs first.
    pub fn resume(&self) {
        self.parts.queue.resume();
    }
}
