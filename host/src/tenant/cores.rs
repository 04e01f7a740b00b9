//! The host's cores shared fairly among tenants: a plugin call runs only with one of the
//! machine's cores, granted in turn to each tenant with calls waiting.
//!
//! A tenant's reconcile slots, requests and cache are its own, but a plugin call's CPU is the
//! one resource every tenant shares: without this gate, a tenant with more calls in flight
//! than the machine has cores takes the cores in proportion to its calls, and another tenant's
//! call shares a core with them. [`Cores`] holds as many *cores* as the machine's available
//! parallelism; each *flow* (a tenant namespace, or the host's own plugins as one more flow)
//! takes one for each call and gives it back when the call ends. As in the API server's
//! priority and fairness, the flows with calls waiting are served in turn (round robin, each
//! flow's calls first come, first served), first those under their fair share (the cores over
//! the flows busy now, at least one); a core no such flow wants goes to the others in turn, so
//! none stays idle while a call waits. A tenant never holds every core of a machine with more
//! than one: one is left for the host's own plugins, the other tenants and the executor that
//! serves everyone's watches, so another tenant's call finds a core free whatever one tenant
//! floods. The host's own flow may use every core.
//!
//! A call is not interrupted once it has its core: what bounds one call's CPU is its
//! sandbox's deadline. A host without tenants has no [`Cores`]: its calls take no core, and
//! its call slots alone bound them, as before.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// The machine's cores shared by flows; clones share them.
#[derive(Clone, Debug)]
pub struct Cores {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    /// Cores in all.
    total: usize,
    /// Cores no call holds.
    free: usize,
    flows: Vec<Flow>,
    /// The flow whose turn comes first at the next grant.
    turn: usize,
}

#[derive(Debug)]
struct Flow {
    /// The tenant namespace, or the host's own plugins.
    name: String,
    /// A tenant's flow never holds every core.
    tenant: bool,
    /// Cores it holds.
    running: usize,
    /// How long its calls held a core, those that gave it back.
    held: Duration,
    /// Its calls waiting for a core, first come first.
    waiting: VecDeque<oneshot::Sender<Core>>,
}

impl Flow {
    /// Whether it holds a core or has a call waiting for one.
    fn busy(&self) -> bool {
        self.running > 0 || self.waiting.iter().any(|w| !w.is_closed())
    }
}

impl State {
    /// The cores flow `f` may hold while others wait: the cores over the flows busy now, at
    /// least one.
    fn fair(&self, f: usize) -> usize {
        let busy = self.flows.iter().filter(|f| f.busy()).count().max(1);
        (self.total / busy).max(1).min(self.cap(f))
    }

    /// The most cores flow `f` may ever hold: every core for the host's own flow; for a
    /// tenant's, every core but one of a machine with more than one.
    fn cap(&self, f: usize) -> usize {
        if self.flows[f].tenant {
            self.total.saturating_sub(1).max(1)
        } else {
            self.total
        }
    }

    /// The next flow in turn from `turn` with a call waiting and fewer cores than `limit`.
    fn next(&self, limit: impl Fn(usize) -> usize) -> Option<usize> {
        let n = self.flows.len();
        (0..n)
            .map(|i| (self.turn + i) % n)
            .find(|&f| !self.flows[f].waiting.is_empty() && self.flows[f].running < limit(f))
    }

    /// Grants free cores to waiting calls: first to the flows under their fair share, in turn;
    /// cores still free then go to the others, in turn, up to their cap (no core stays idle
    /// while a call may have it).
    fn dispatch(&mut self, cores: &Arc<Mutex<State>>) {
        while self.free > 0 {
            let Some(f) = self
                .next(|f| self.fair(f))
                .or_else(|| self.next(|f| self.cap(f)))
            else {
                return;
            };
            let Some(waiter) = self.flows[f].waiting.pop_front() else {
                return;
            };
            let core = Core {
                held: Some((cores.clone(), f)),
                since: Instant::now(),
            };
            match waiter.send(core) {
                Ok(()) => {
                    self.flows[f].running += 1;
                    self.free -= 1;
                    self.turn = (f + 1) % self.flows.len();
                }
                // The call stopped waiting: its core was never counted (and must not be given
                // back by its drop, which would take this lock again).
                Err(mut core) => core.held = None,
            }
        }
    }
}

/// One flow's handle: its calls take their cores through it; clones share the flow.
#[derive(Clone, Debug)]
pub struct Share {
    state: Arc<Mutex<State>>,
    flow: usize,
}

/// A core held by one call, given back (and granted to the next call in turn) when dropped.
#[derive(Debug)]
pub struct Core {
    held: Option<(Arc<Mutex<State>>, usize)>,
    since: Instant,
}

impl Drop for Core {
    fn drop(&mut self) {
        if let Some((cores, f)) = self.held.take() {
            let mut st = cores.lock().unwrap_or_else(PoisonError::into_inner);
            st.flows[f].running -= 1;
            st.flows[f].held += self.since.elapsed();
            st.free += 1;
            st.dispatch(&cores);
        }
    }
}

/// A waiting call was never given a core: its turn was dropped with the cores themselves.
#[derive(Debug, thiserror::Error)]
#[error("no core for the call: the host's cores are gone")]
pub struct Gone;

impl Cores {
    /// `total` cores (at least one).
    pub fn new(total: usize) -> Self {
        let total = total.max(1);
        Self {
            state: Arc::new(Mutex::new(State {
                total,
                free: total,
                flows: Vec::new(),
                turn: 0,
            })),
        }
    }

    /// As many cores as the machine's available parallelism (two when it is not known).
    pub fn of_machine() -> Self {
        Self::new(std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get))
    }

    /// The flow of tenant namespace `name`, which never holds every core.
    pub fn tenant(&self, name: &str) -> Share {
        self.flow(name, true)
    }

    /// The flow of the host's own plugins.
    pub fn host(&self) -> Share {
        self.flow("", false)
    }

    fn flow(&self, name: &str, tenant: bool) -> Share {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let flow = match st
            .flows
            .iter()
            .position(|f| f.name == name && f.tenant == tenant)
        {
            Some(f) => f,
            None => {
                st.flows.push(Flow {
                    name: name.to_owned(),
                    tenant,
                    running: 0,
                    held: Duration::ZERO,
                    waiting: VecDeque::new(),
                });
                st.flows.len() - 1
            }
        };
        Share {
            state: self.state.clone(),
            flow,
        }
    }
}

impl Share {
    /// Waits for a core of this flow's turn; the call runs while the [`Core`] is held.
    pub async fn acquire(&self) -> Result<Core, Gone> {
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            st.flows[self.flow].waiting.push_back(tx);
            st.dispatch(&self.state);
        }
        rx.await.map_err(|_| Gone)
    }

    /// How long this flow's calls held a core (those that gave it back), and how many wait
    /// for one now: what the flow used of the machine, and how far it is behind.
    pub fn usage(&self) -> (Duration, usize) {
        let st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let flow = &st.flows[self.flow];
        let waiting = flow.waiting.iter().filter(|w| !w.is_closed()).count();
        (flow.held, waiting)
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use futures::poll;

    use super::*;

    fn held(core: std::task::Poll<Result<Core, Gone>>) -> Core {
        match core {
            std::task::Poll::Ready(Ok(core)) => core,
            other => panic!("no core: {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_quiet_tenants_call_is_served_before_the_flooding_tenants_next_ones() {
        let cores = Cores::new(1);
        let (flooding, quiet) = (cores.tenant("team-b"), cores.tenant("team-a"));
        let first = held(poll!(pin!(flooding.acquire())));
        let mut queued = Vec::new();
        for _ in 0..3 {
            let mut call = Box::pin(flooding.acquire());
            assert!(poll!(call.as_mut()).is_pending(), "the only core is held");
            queued.push(call);
        }
        let mut edit = pin!(quiet.acquire());
        assert!(poll!(edit.as_mut()).is_pending());
        drop(first);
        let edit = held(poll!(edit.as_mut()));
        for call in &mut queued {
            assert!(
                poll!(call.as_mut()).is_pending(),
                "team B's calls wait for team A's"
            );
        }
        drop(edit);
        let _next = held(poll!(queued[0].as_mut()));
        assert!(poll!(queued[1].as_mut()).is_pending(), "one core");
    }

    #[tokio::test]
    async fn a_tenant_never_holds_every_core_and_the_host_may() {
        let cores = Cores::new(2);
        let (tenant, host) = (cores.tenant("team-b"), cores.host());
        let one = held(poll!(pin!(tenant.acquire())));
        let mut two = pin!(tenant.acquire());
        assert!(
            poll!(two.as_mut()).is_pending(),
            "the second core is left to the others"
        );
        let hosts = held(poll!(pin!(host.acquire())));
        drop((one, hosts));
        drop(held(poll!(two.as_mut())));
        let _both = (
            held(poll!(pin!(host.acquire()))),
            held(poll!(pin!(host.acquire()))),
        );
    }

    #[tokio::test]
    async fn a_flow_over_its_fair_share_has_idle_cores_but_waits_behind_one_under_it() {
        let cores = Cores::new(4);
        let (flooding, quiet) = (cores.tenant("team-b"), cores.tenant("team-a"));
        let mut b: Vec<Core> = Vec::new();
        for _ in 0..3 {
            b.push(held(poll!(pin!(flooding.acquire()))));
        }
        let mut fourth = Box::pin(flooding.acquire());
        assert!(poll!(fourth.as_mut()).is_pending(), "never every core");
        let _a = held(poll!(pin!(quiet.acquire())));
        drop(b.pop());
        // Nobody else waits: team B's call takes the core though team B is over its share.
        b.push(held(poll!(fourth.as_mut())));
        let mut fifth = Box::pin(flooding.acquire());
        let mut second = pin!(quiet.acquire());
        assert!(poll!(fifth.as_mut()).is_pending());
        assert!(poll!(second.as_mut()).is_pending(), "every core is held");
        drop(b.pop());
        let _second = held(poll!(second.as_mut()));
        assert!(
            poll!(fifth.as_mut()).is_pending(),
            "team A had 1 of its fair 2, team B 2 of 2"
        );
    }

    #[tokio::test]
    async fn each_flow_counts_how_long_its_calls_held_a_core_and_its_calls_waiting() {
        let cores = Cores::new(1);
        let (flooding, quiet) = (cores.tenant("team-b"), cores.tenant("team-a"));
        let call = held(poll!(pin!(flooding.acquire())));
        let mut waiting = pin!(quiet.acquire());
        assert!(poll!(waiting.as_mut()).is_pending());
        assert_eq!(quiet.usage(), (Duration::ZERO, 1));
        std::thread::sleep(Duration::from_millis(20));
        drop(call);
        let (held_for, queued) = flooding.usage();
        assert!(held_for >= Duration::from_millis(20), "{held_for:?}");
        assert_eq!(queued, 0);
        assert_eq!(quiet.usage().1, 0, "granted");
    }

    #[tokio::test]
    async fn a_call_that_stops_waiting_takes_no_core() {
        let cores = Cores::new(1);
        let share = cores.tenant("team-a");
        let first = held(poll!(pin!(share.acquire())));
        {
            let mut gone = pin!(share.acquire());
            assert!(poll!(gone.as_mut()).is_pending());
        }
        drop(first);
        let _again = held(poll!(pin!(share.acquire())));
        let host = cores.host();
        let mut next = pin!(host.acquire());
        assert!(poll!(next.as_mut()).is_pending(), "one core, held");
    }
}
