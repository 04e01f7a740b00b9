//! The host's tasks as runnables: each says whether it needs leadership; they start stage by
//! stage and stop in the reverse order.
//!
//! A runnable that needs leadership runs only while this replica leads: it starts each time the
//! leader's fence opens and is stopped when the fence shuts (the shard coordinator). The others
//! run from the host's start to its stop (the operations server, the controllers, a replica's
//! own share, the candidates). On stop, the last stage is stopped first and awaited before the
//! one before it: the tasks beside the controllers, then the controllers (in-flight reconciles
//! finish), then the operations server, so `/healthz` answers until the end.
//!
//! A runnable that ends on its own before the host stops (it failed, or panicked) stops the
//! host: the process ends and its supervisor restarts it, as when a controller-runtime manager's
//! runnable returns an error.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::fence::Fence;

/// When a stage's runnables start; they stop in the reverse order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Stage {
    /// What operators and probes ask: `/metrics`, `/healthz`, `/readyz`, `/plugins`.
    Serving,
    /// The plugins' controllers, following the plugin source.
    Controllers,
    /// What works beside the controllers: sharding's placement, the candidates.
    Beside,
}

/// A task's future, made from the token that stops it.
type Run = Box<dyn FnOnce(CancellationToken) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// A runnable, not started yet.
struct Runnable {
    stage: Stage,
    name: &'static str,
    run: Run,
}

/// The host's runnables, added in any order and started stage by stage.
#[derive(Default)]
pub(super) struct Runnables {
    added: Vec<Runnable>,
}

impl Runnables {
    /// Adds a runnable that runs from its stage's start to its stop.
    pub(super) fn always<F, Fut>(&mut self, stage: Stage, name: &'static str, run: F)
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.added.push(Runnable {
            stage,
            name,
            run: Box::new(move |stop| Box::pin(run(stop))),
        });
    }

    /// Adds a runnable that needs leadership: `term` makes a fresh run each time `leading`
    /// opens, stopped when it shuts (and when the host stops).
    pub(super) fn leading<F, Fut>(
        &mut self,
        stage: Stage,
        name: &'static str,
        leading: Fence,
        mut term: F,
    ) where
        F: FnMut(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.always(stage, name, move |stop| async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = leading.opened() => {}
                }
                let ended = stop.child_token();
                let mut run = std::pin::pin!(term(ended.clone()));
                tokio::select! {
                    () = &mut run => {
                        if !stop.is_cancelled() {
                            tracing::warn!(runnable = name, "ended on its own while leading");
                        }
                        return;
                    }
                    () = leading.shut() => {
                        tracing::debug!(runnable = name, "leadership shut: stopped until it opens");
                        ended.cancel();
                        run.await;
                    }
                }
            }
        });
    }

    /// Starts every runnable, stage by stage.
    pub(super) fn start(mut self) -> Running {
        self.added.sort_by_key(|r| r.stage);
        let (ended_tx, ended) = mpsc::unbounded_channel();
        let mut stages: Vec<Started> = Vec::new();
        for runnable in self.added {
            if stages.last().is_none_or(|s| s.stage != runnable.stage) {
                stages.push(Started {
                    stage: runnable.stage,
                    stop: CancellationToken::new(),
                    tasks: Vec::new(),
                });
            }
            let Some(started) = stages.last_mut() else {
                continue;
            };
            let signal = Ended {
                name: runnable.name,
                to: ended_tx.clone(),
            };
            let run = (runnable.run)(started.stop.clone());
            let task = tokio::spawn(async move {
                let _signal = signal;
                run.await;
            });
            started.tasks.push((runnable.name, task));
        }
        Running { stages, ended }
    }
}

/// One stage's runnables, started.
struct Started {
    stage: Stage,
    stop: CancellationToken,
    tasks: Vec<(&'static str, JoinHandle<()>)>,
}

/// Tells the host a runnable ended, however it ended (returned, panicked, aborted).
struct Ended {
    name: &'static str,
    to: mpsc::UnboundedSender<&'static str>,
}

impl Drop for Ended {
    fn drop(&mut self) {
        // The receiver is gone once the host stops: nothing to tell then.
        let _ = self.to.send(self.name);
    }
}

/// The runnables, started.
pub(super) struct Running {
    stages: Vec<Started>,
    ended: mpsc::UnboundedReceiver<&'static str>,
}

impl Running {
    /// Every task's abort handle: a hard stop ends them all where they are.
    pub(super) fn aborts(&self) -> Vec<AbortHandle> {
        self.stages
            .iter()
            .flat_map(|s| s.tasks.iter().map(|(_, t)| t.abort_handle()))
            .collect()
    }

    /// Runs until `stop`, or until a runnable ends on its own; then stops the stages in the
    /// reverse order, each awaited before the one before it. Returns the runnable that ended on
    /// its own, if one did.
    pub(super) async fn run_until(mut self, stop: CancellationToken) -> Option<&'static str> {
        let ended = tokio::select! {
            () = stop.cancelled() => None,
            Some(name) = self.ended.recv() => {
                tracing::error!(runnable = name, "ended before the host stopped: stopping the host");
                Some(name)
            }
        };
        for stage in self.stages.into_iter().rev() {
            tracing::debug!(stage = ?stage.stage, "stopping");
            stage.stop.cancel();
            for (name, task) in stage.tasks {
                if let Err(e) = task.await
                    && e.is_panic()
                {
                    tracing::error!(runnable = name, error = %e, "panicked");
                }
            }
        }
        ended
    }
}

#[cfg(test)]
#[path = "runnables_tests.rs"]
mod tests;
