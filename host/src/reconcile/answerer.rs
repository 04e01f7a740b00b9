//! The answerer: who answers a controller's keys. Alone, the version serving the kind; a
//! capability beside the controller (the rollout of a candidate, `crate::rollout`) plugs in an
//! answerer of its own that routes some parents to another version and asks a second version
//! beside the applied one.
//!
//! The controller holds its answerer in a [`Seat`], swapped whole: a hot swap puts the new
//! version in the same answerer ([`Answerer::with_serving`]); whoever plugged an answerer in
//! may replace it through the seat (a promotion makes the candidate serve alone). A reconcile
//! takes its route once at its start and finishes on it, so it never mixes two versions.

use std::sync::{Arc, PoisonError, RwLock};

use futures::future::BoxFuture;

use super::binding::Binding;
use crate::answer::{PluginError, Verdict};
use crate::metrics::Metrics;
use crate::plugin::Requeue;
use crate::runtime::{Cause, ObjectKey, Queue};

/// Who answers a controller's keys.
pub trait Answerer: std::any::Any + Send + Sync {
    /// The version serving the kind (its stores are the ones the controller reads).
    fn serving(&self) -> &Arc<Binding>;

    /// The same answerer with `serving` in place of the version serving (a hot swap).
    fn with_serving(&self, serving: Arc<Binding>) -> Arc<dyn Answerer>;

    /// For the parent `key`: the version whose answer is applied, and what is asked beside it.
    fn route(&self, key: &ObjectKey) -> Route;
}

/// The versions one reconcile asks.
pub struct Route {
    /// The version whose judged answer is applied.
    pub applied: Arc<Binding>,
    /// A version asked on the same inputs at the same time, whose answer is only compared.
    pub beside: Option<Box<dyn Beside>>,
}

/// A version asked beside the applied one: nothing of it is written, its failures never reach
/// the parent.
pub trait Beside: Send + Sync {
    /// The version asked.
    fn binding(&self) -> &Arc<Binding>;

    /// Both judged answers for the parent `key` (the applied version's, and this one's): what
    /// the comparison decides is carried out before the reconcile goes on.
    fn compared<'a>(
        &'a self,
        key: &'a ObjectKey,
        applied: &'a Result<Verdict, PluginError>,
        beside: &'a Result<Verdict, PluginError>,
    ) -> BoxFuture<'a, ()>;
}

/// One version answers every parent.
pub struct Alone(pub Arc<Binding>);

impl Answerer for Alone {
    fn serving(&self) -> &Arc<Binding> {
        &self.0
    }

    fn with_serving(&self, serving: Arc<Binding>) -> Arc<dyn Answerer> {
        Arc::new(Alone(serving))
    }

    fn route(&self, _: &ObjectKey) -> Route {
        Route {
            applied: self.0.clone(),
            beside: None,
        }
    }
}

/// A controller's answerer, and what an answerer may ask of its controller: to be replaced,
/// to have every parent reconciled again, whether an answer asks to run again soon.
#[derive(Clone)]
pub struct Seat {
    answerer: Arc<RwLock<Arc<dyn Answerer>>>,
    queue: Arc<Queue>,
    metrics: Arc<Metrics>,
}

impl Seat {
    pub(super) fn new(
        answerer: Arc<dyn Answerer>,
        queue: Arc<Queue>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            answerer: Arc::new(RwLock::new(answerer)),
            queue,
            metrics,
        }
    }

    /// The answerer now.
    pub fn get(&self) -> Arc<dyn Answerer> {
        self.answerer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the answerer with what `change` makes of it, under the seat's lock (`None`:
    /// left as it is); the answerer replaced, if it was.
    pub fn replace(
        &self,
        change: impl FnOnce(&Arc<dyn Answerer>) -> Option<Arc<dyn Answerer>>,
    ) -> Option<Arc<dyn Answerer>> {
        let mut answerer = self
            .answerer
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let new = change(&answerer)?;
        Some(std::mem::replace(&mut *answerer, new))
    }

    /// Enqueues every cached parent (each change of who answers must reach all of them).
    pub fn enqueue_all(&self) {
        for key in self.get().serving().cache.parents.keys() {
            self.queue.add(key, Cause::Outside);
        }
    }

    /// Whether an answer asking for `requeue` asks to run again soon (a busy reconcile).
    pub fn requeues_soon(&self, requeue: Requeue) -> bool {
        self.queue.requeues_soon(super::finish_of(requeue))
    }

    /// The host's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}
