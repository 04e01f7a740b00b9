//! Times the stages of one reconcile in a fresh instance, for the benchmarks' per-reconcile table.
//!
//! The stages are those of [`Plugin::reconcile`], run by the same code:
//! - **store**: the call's `Store` (WASI context with nothing granted, memory limiter, log
//!   budget, deadline);
//! - **instantiate**: a new instance from the plugin's `InstancePre` (an instance slot of the
//!   pool, the memory image mapped, tables and imports set up, the guest's start functions);
//! - **lower**: the request copied into the guest (the guest's allocator called for each
//!   string);
//! - **guest**: the export running (the host functions it calls included);
//! - **lift**: the answer copied out of the guest, and its `post-return`;
//! - **drop**: the store dropped, the instance's slot reset for the next one (memory restored
//!   to the image, tables cleared);
//! - **check**: the answer checked against the contract and the response limit.
//!
//! Lowering, guest work and lifting happen inside one wasmtime call; wasmtime's call hook
//! marks each entry into and return from wasm, and the longest stretch in wasm is the export
//! itself (the allocator calls while lowering and the `post-return` after it are short).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use wasmtime::{CallHook, Store};

use super::call_error::CallError;
use super::sandbox::{Marks, Plugin};
use super::store::State;
use super::types::{ReconcileRequest, ReconcileResponse};

/// How long each stage of one fresh-instance reconcile took (see the module's docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    /// Building the call's store.
    pub store: Duration,
    /// Instantiating the component.
    pub instantiate: Duration,
    /// Copying the request into the guest.
    pub lower: Duration,
    /// The guest's reconcile itself.
    pub guest: Duration,
    /// Copying the answer out of the guest.
    pub lift: Duration,
    /// Dropping the store (the instance's slot reset).
    pub drop: Duration,
    /// Checking the answer.
    pub check: Duration,
}

impl Phases {
    /// The whole call, as [`Plugin::reconcile`] costs it.
    pub fn total(&self) -> Duration {
        self.store + self.instantiate + self.lower + self.guest + self.lift + self.drop + self.check
    }
}

impl Plugin {
    /// [`Plugin::reconcile`], timed stage by stage (for the benchmarks: the clock and
    /// wasmtime's call hook add a few hundred nanoseconds).
    pub fn reconcile_timed(
        &self,
        req: &ReconcileRequest,
    ) -> Result<(ReconcileResponse, Phases), CallError> {
        let mut clock = Clock::new();
        let answer = self.call().run_marked(&mut clock, async |store, guest| {
            guest.reconcile(store, req).await
        });
        let dropped = Instant::now();
        let checked = self.check_reconcile(answer?)?;
        let end = Instant::now();
        let mut phases = clock.phases(dropped);
        phases.check = end - dropped;
        Ok((checked, phases))
    }
}

/// The instants a timed call passed, and wasmtime's entries into and returns from wasm.
struct Clock {
    start: Instant,
    stored: Option<Instant>,
    instantiated: Option<Instant>,
    called: Option<Instant>,
    /// (when, true on entering wasm), shared with the store's call hook.
    crossings: Arc<Mutex<Vec<(Instant, bool)>>>,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            start: Instant::now(),
            stored: None,
            instantiated: None,
            called: None,
            crossings: Arc::new(Mutex::new(Vec::with_capacity(1024))),
        }
    }

    /// The stages, given the instant the call returned (its store dropped).
    fn phases(&self, dropped: Instant) -> Phases {
        let stored = self.stored.unwrap_or(self.start);
        let instantiated = self.instantiated.unwrap_or(stored);
        let called = self.called.unwrap_or(instantiated);
        let crossings = self
            .crossings
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (enter, leave) = longest_stretch(&crossings, instantiated, called)
            .unwrap_or((instantiated, instantiated));
        Phases {
            store: stored - self.start,
            instantiate: instantiated - stored,
            lower: enter - instantiated,
            guest: leave - enter,
            lift: called - leave,
            drop: dropped.saturating_duration_since(called),
            check: Duration::ZERO,
        }
    }
}

impl Marks for Clock {
    fn stored(&mut self, store: &mut Store<State>) {
        let crossings = self.crossings.clone();
        store.call_hook(move |_, hook| {
            let entering = match hook {
                CallHook::CallingWasm => true,
                CallHook::ReturningFromWasm => false,
                CallHook::CallingHost | CallHook::ReturningFromHost => return Ok(()),
            };
            let mut crossings = crossings.lock().unwrap_or_else(PoisonError::into_inner);
            crossings.push((Instant::now(), entering));
            Ok(())
        });
        self.stored = Some(Instant::now());
    }

    fn instantiated(&mut self) {
        self.instantiated = Some(Instant::now());
    }

    fn called(&mut self) {
        self.called = Some(Instant::now());
    }
}

/// The longest stretch in wasm between `from` and `to`: (entered, returned).
fn longest_stretch(
    crossings: &[(Instant, bool)],
    from: Instant,
    to: Instant,
) -> Option<(Instant, Instant)> {
    let mut depth = 0usize;
    let mut entered = None;
    let mut longest: Option<(Instant, Instant)> = None;
    for &(at, entering) in crossings.iter().filter(|(at, _)| (from..=to).contains(at)) {
        if entering {
            if depth == 0 {
                entered = Some(at);
            }
            depth += 1;
        } else {
            depth = depth.saturating_sub(1);
            if let (0, Some(start)) = (depth, entered) {
                if longest.is_none_or(|(a, b)| at - start > b - a) {
                    longest = Some((start, at));
                }
            }
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_top_level_stretch_in_wasm_is_the_export() {
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        // Two allocator calls while lowering, the export (with a nested wasm call), the post-return.
        let crossings = [
            (at(1), true),
            (at(2), false),
            (at(3), true),
            (at(4), false),
            (at(10), true),
            (at(20), true),
            (at(21), false),
            (at(50), false),
            (at(52), true),
            (at(53), false),
        ];
        assert_eq!(
            longest_stretch(&crossings, at(0), at(60)),
            Some((at(10), at(50)))
        );
        // Crossings outside the window (the instance's start functions) do not count.
        assert_eq!(
            longest_stretch(&crossings, at(51), at(60)),
            Some((at(52), at(53)))
        );
        assert_eq!(longest_stretch(&crossings, at(54), at(60)), None);
    }
}
