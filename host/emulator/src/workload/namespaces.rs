//! The namespace controller's task: whenever a terminating namespace or anything in it changes,
//! one pass of [`namespace::terminate`] over it. It always runs, with or without the workload
//! simulation, as kube-controller-manager's namespace controller does in every cluster.

use std::sync::Arc;
use std::time::Duration;

use crate::state::shared::Shared;
use crate::write::namespace;

/// How long the task lets changes gather after the first wakes it, so that a burst (a
/// controller removing its finalizers one object at a time) costs one pass, not one per change.
const GATHER: Duration = Duration::from_millis(10);

/// Run the controller until the emulator stops.
pub async fn run(shared: Arc<Shared>) {
    let wake = {
        let mut store = shared.lock();
        // Namespaces a state file left terminating are looked at once at start.
        store.terminating().all_changed();
        store.terminating().waker()
    };
    loop {
        wake.notified().await;
        tokio::time::sleep(GATHER).await;
        let changed = shared.lock().terminating().take_changed();
        for name in changed {
            namespace::terminate(&mut shared.lock(), &name);
        }
    }
}
