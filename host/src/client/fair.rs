//! Shares the host's request rate between plugins: a fair queue in front of one token bucket.
//!
//! Every request belongs to a [`Flow`]: one per plugin (its applies, prunes, status patches,
//! finalizers and Events), one per tenant namespace (all its plugins' requests and its
//! watches) and the host's own (watches and lists, the leader Lease, `Plugin`
//! objects). While the bucket holds tokens a request goes at once. When it is empty, requests
//! wait in a queue per flow and the flows take turns, one request per token (round robin, the
//! way API Priority and Fairness shares an API server's seats between flows), so a plugin's
//! burst of writes delays another plugin's next request by one token per waiting flow, not by
//! the whole burst; within a flow, requests keep their order. A `429` pushback holds every flow.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::runtime::TokenBucket;

/// Whose request this is: a plugin's name, or the host's own ([`Flow::host`]). Carried as a
/// request extension from a plugin's client ([`super::for_plugin`]) to the host's gate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Flow(Arc<str>);

impl Flow {
    /// The requests of the plugin named `name`.
    pub fn plugin(name: &str) -> Self {
        Self(Arc::from(format!("plugin/{name}")))
    }

    /// The requests of tenant namespace `namespace`, whichever of its plugins sends them.
    pub fn tenant(namespace: &str) -> Self {
        Self(Arc::from(format!("tenant/{namespace}")))
    }

    /// The host's own requests (informers, leader election, Plugin objects).
    pub fn host() -> Self {
        Self(Arc::from("host"))
    }
}

/// The waiting requests of every flow, the host's bucket and the server's last pushback.
pub(super) struct FairQueue {
    state: Mutex<State>,
}

struct State {
    bucket: TokenBucket,
    hold_until: Option<Instant>,
    /// Flows with waiting requests, in the order of their next turn.
    turns: VecDeque<Flow>,
    waiting: HashMap<Flow, VecDeque<oneshot::Sender<()>>>,
    /// Whether a task is handing out tokens to the waiting requests.
    dispatching: bool,
}

impl State {
    fn held(&self, now: Instant) -> Duration {
        self.hold_until
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(now))
    }

    /// Queues a request of `flow`; a flow that had nothing waiting takes the last turn.
    fn enqueue(&mut self, flow: &Flow) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let queue = self.waiting.entry(flow.clone()).or_default();
        if queue.is_empty() {
            self.turns.push_back(flow.clone());
        }
        queue.push_back(tx);
        rx
    }

    /// Lets the next flow's oldest request go (skipping requests given up meanwhile); the flow
    /// takes the last turn if it still has requests waiting.
    fn grant_next(&mut self) {
        while let Some(flow) = self.turns.pop_front() {
            let Some(queue) = self.waiting.get_mut(&flow) else {
                continue;
            };
            let mut granted = false;
            while let Some(request) = queue.pop_front() {
                if request.send(()).is_ok() {
                    granted = true;
                    break;
                }
            }
            if queue.is_empty() {
                self.waiting.remove(&flow);
            } else {
                self.turns.push_back(flow);
            }
            if granted {
                return;
            }
        }
    }
}

impl FairQueue {
    /// An empty queue in front of a full bucket of `qps` per second and `burst` at once.
    pub(super) fn new(qps: f64, burst: u32) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                bucket: TokenBucket::new(qps, burst),
                hold_until: None,
                turns: VecDeque::new(),
                waiting: HashMap::new(),
                dispatching: false,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves when a request of `flow` may be sent: at once while tokens are free and nobody
    /// waits, else at its turn.
    pub(super) async fn admit(self: &Arc<Self>, flow: &Flow) {
        let turn = {
            let mut state = self.lock();
            let now = Instant::now();
            if state.turns.is_empty()
                && state.held(now).is_zero()
                && state.bucket.try_take(now).is_ok()
            {
                return;
            }
            let turn = state.enqueue(flow);
            if !state.dispatching {
                state.dispatching = true;
                tokio::spawn(self.clone().dispatch());
            }
            turn
        };
        // An error means the dispatcher is gone (the runtime is shutting down): go.
        let _ = turn.await;
    }

    /// Holds every request until `until` (a `429` answer's `Retry-After`).
    pub(super) fn hold(&self, until: Instant) {
        let mut state = self.lock();
        state.hold_until = Some(state.hold_until.map_or(until, |t| t.max(until)));
    }

    /// How long a request arriving now would be held by the server's pushback.
    #[cfg(test)]
    fn held(&self) -> Duration {
        self.lock().held(Instant::now())
    }

    /// Hands out tokens to the waiting requests, one flow after another, until none waits.
    async fn dispatch(self: Arc<Self>) {
        loop {
            let wait = {
                let mut state = self.lock();
                if state.turns.is_empty() {
                    state.dispatching = false;
                    return;
                }
                let now = Instant::now();
                let held = state.held(now);
                if held.is_zero() {
                    match state.bucket.try_take(now) {
                        Ok(()) => {
                            state.grant_next();
                            continue;
                        }
                        Err(wait) => wait,
                    }
                } else {
                    held
                }
            };
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        State {
            bucket: TokenBucket::new(1.0, 1),
            hold_until: None,
            turns: VecDeque::new(),
            waiting: HashMap::new(),
            dispatching: false,
        }
    }

    /// Which of `turns` got their token, in order, after `n` grants.
    fn granted(
        state: &mut State,
        turns: &mut [(&str, oneshot::Receiver<()>)],
        n: usize,
    ) -> Vec<String> {
        let mut order = Vec::new();
        for _ in 0..n {
            state.grant_next();
            for (name, turn) in turns.iter_mut() {
                if turn.try_recv().is_ok() {
                    order.push((*name).to_owned());
                }
            }
        }
        order
    }

    #[test]
    fn one_plugin_saturating_the_bucket_does_not_hold_back_anothers_request() {
        let mut state = state();
        let (busy, quiet) = (Flow::plugin("busy"), Flow::plugin("quiet"));
        let mut turns: Vec<(&str, oneshot::Receiver<()>)> =
            (0..20).map(|_| ("busy", state.enqueue(&busy))).collect();
        turns.push(("quiet", state.enqueue(&quiet)));
        let order = granted(&mut state, &mut turns, 2);
        assert_eq!(
            order,
            ["busy", "quiet"],
            "the quiet plugin waits one turn, not 20"
        );
    }

    #[test]
    fn waiting_flows_take_turns_one_request_each_in_order_within_a_flow() {
        let mut state = state();
        let (a, b, host) = (Flow::plugin("a"), Flow::plugin("b"), Flow::host());
        let mut turns = vec![
            ("a1", state.enqueue(&a)),
            ("a2", state.enqueue(&a)),
            ("a3", state.enqueue(&a)),
            ("b1", state.enqueue(&b)),
            ("b2", state.enqueue(&b)),
            ("host", state.enqueue(&host)),
        ];
        let order = granted(&mut state, &mut turns, 6);
        assert_eq!(order, ["a1", "b1", "host", "a2", "b2", "a3"]);
        assert!(state.turns.is_empty() && state.waiting.is_empty());
    }

    #[test]
    fn a_request_given_up_while_waiting_passes_its_turn_on() {
        let mut state = state();
        let (a, b) = (Flow::plugin("a"), Flow::plugin("b"));
        drop(state.enqueue(&a));
        let mut turns = vec![("a", state.enqueue(&a)), ("b", state.enqueue(&b))];
        let order = granted(&mut state, &mut turns, 2);
        assert_eq!(order, ["a", "b"]);
    }

    #[tokio::test]
    async fn a_pushback_holds_every_flow_until_it_ends() {
        let queue = FairQueue::new(1000.0, 1000);
        let started = Instant::now();
        queue.hold(started + Duration::from_millis(300));
        queue.admit(&Flow::plugin("a")).await;
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(queue.held(), Duration::ZERO, "the hold is over");
    }

    #[tokio::test]
    async fn without_a_rate_requests_never_queue() {
        let queue = FairQueue::new(0.0, 0);
        for _ in 0..1000 {
            queue.admit(&Flow::plugin("a")).await;
        }
        assert!(queue.lock().turns.is_empty());
        assert!(!queue.lock().dispatching, "nothing ever waited");
    }
}
