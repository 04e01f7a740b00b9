//! The one leadership gate: whether this replica leads, and a client whose writes stop the moment its lease could run out.
//!
//! Every part of the host that writes asks the same [`Fence`] whether it leads
//! ([`Fence::allows`], [`Fence::opened`], [`Fence::shut`]) and writes through a client the
//! fence built ([`Fence::client`]): the controllers (`ControllerConfig::fence`, in the host's
//! cluster and in each member), the rollout's phase store and its Events, the `Plugin` status
//! writer, the shard coordinator. Only the Leases are written without one.
//!
//! Stopping the workers when the lease is lost is not enough on its own: a reconcile in flight,
//! a request waiting in the client's rate limit or behind a `Retry-After`, or a guard task that
//! runs late on a busy machine could still send a write after another replica took the lease.
//! So the fence is checked at the write itself (the renew deadline of client-go): the election
//! opens it until the step-down moment of the last renewal it read ([`crate::leader`]), and a
//! write is sent only before that moment. A write still waiting for the client when the moment
//! comes is dropped unsent and fails with [`FenceError::NotLeading`]; the key is retried by
//! whichever replica then leads. Reads and watches are never fenced: a standby keeps its caches
//! warm. The only replica (no election) holds a fence that is always open.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::Client;
use kube::client::Body;
use tokio::sync::watch;
use tower::BoxError;

use crate::client::{self, Next, Sent, Wrap, WrapLayer};

/// A write was withheld.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    /// This replica's lease may have run out (or was never held): the write was not sent.
    #[error(
        "{request} withheld: this replica may no longer hold its lease (the leader's, or its shard's)"
    )]
    NotLeading {
        /// The `METHOD path` of the withheld request.
        request: String,
    },
}

/// Until when writes may be sent, in milliseconds since the Unix epoch (`u64::MAX`: always).
///
/// Clones share one deadline: the election moves it, everyone else reads it.
#[derive(Clone, Debug)]
pub struct Fence {
    deadline: Arc<watch::Sender<u64>>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The deadline of a fence that never closes.
const ALWAYS: u64 = u64::MAX;

impl Fence {
    /// The fence of the only replica: always open.
    pub fn always() -> Self {
        Self {
            deadline: Arc::new(watch::Sender::new(ALWAYS)),
        }
    }

    /// A fence that lets no write through until [`Fence::open_until`].
    pub fn closed() -> Self {
        Self {
            deadline: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Lets writes through until `until` (a wall-clock time, as the lease's renewals are).
    pub fn open_until(&self, until: SystemTime) {
        let ms = until
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.deadline
            .send_if_modified(|d| std::mem::replace(d, ms) != ms);
    }

    /// Lets no write through from now on.
    pub fn close(&self) {
        self.deadline
            .send_if_modified(|d| std::mem::replace(d, 0) != 0);
    }

    /// Whether this replica leads now, so a write may be sent: the one way the host asks.
    pub fn allows(&self) -> bool {
        now_ms() < *self.deadline.borrow()
    }

    /// Resolves once writes may no longer be sent (at the deadline, unless it moves on meanwhile);
    /// never for an [`Fence::always`] fence.
    pub async fn shut(&self) {
        let mut deadline = self.deadline.subscribe();
        loop {
            let until = *deadline.borrow_and_update();
            let now = now_ms();
            if now >= until {
                return;
            }
            let wait = (until != ALWAYS).then(|| Duration::from_millis(until - now));
            tokio::select! {
                // The sender lives in `self`: `changed` cannot fail while this runs.
                _ = deadline.changed() => {}
                () = tokio::time::sleep(wait.unwrap_or_default()), if wait.is_some() => {}
            }
        }
    }

    /// Resolves once writes may be sent (this replica leads), at once if they may now.
    pub async fn opened(&self) {
        let mut deadline = self.deadline.subscribe();
        // The sender lives in `self`: `wait_for` cannot fail while this runs.
        let _ = deadline.wait_for(|until| now_ms() < *until).await;
    }

    /// Resolves when leadership turns: once shut if open now, once open if shut now.
    pub async fn turned(&self) {
        if self.allows() {
            self.shut().await;
        } else {
            self.opened().await;
        }
    }

    /// A client sending `client`'s requests, its writes only while this fence allows them.
    pub fn client(&self, client: &Client) -> Client {
        client::derive(client).with_layer(&self.layer()).build()
    }

    /// The tower layer of [`Fence::client`]: a write goes on only while this fence allows it.
    pub fn layer(&self) -> FenceLayer {
        WrapLayer::new(self.clone())
    }
}

/// The tower layer of a fenced client ([`Fence::layer`]).
pub type FenceLayer = WrapLayer<Fence>;

impl Wrap for Fence {
    /// Sends a read at once; a write only while the fence allows it, and drops it unsent
    /// ([`FenceError::NotLeading`]) if the fence shuts while it waits below.
    fn wrap(&self, request: http::Request<Body>, next: Next) -> Sent {
        let write = !matches!(
            *request.method(),
            http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
        );
        if !write {
            return next.send(request);
        }
        let fence = self.clone();
        Box::pin(async move {
            let withheld: BoxError = Box::new(FenceError::NotLeading {
                request: format!("{} {}", request.method(), request.uri().path()),
            });
            if !fence.allows() {
                return Err(withheld);
            }
            tokio::select! {
                biased;
                () = fence.shut() => Err(withheld),
                sent = next.send(request) => sent,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_fence_allows_nothing_and_an_open_one_until_its_deadline() {
        let fence = Fence::closed();
        assert!(!fence.allows());
        fence.open_until(SystemTime::now() + Duration::from_secs(60));
        assert!(fence.allows());
        fence.open_until(SystemTime::now() - Duration::from_millis(1));
        assert!(!fence.allows(), "a deadline in the past");
        fence.open_until(SystemTime::now() + Duration::from_secs(60));
        fence.close();
        assert!(!fence.allows());
    }

    #[tokio::test]
    async fn shut_resolves_at_the_deadline_and_follows_an_extension() {
        let fence = Fence::closed();
        fence.open_until(SystemTime::now() + Duration::from_millis(100));
        let started = std::time::Instant::now();
        let extend = {
            let fence = fence.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                fence.open_until(SystemTime::now() + Duration::from_millis(200));
            })
        };
        fence.shut().await;
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(240), "extended: {took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        let _ = extend.await;
        fence.close();
        tokio::time::timeout(Duration::from_millis(100), fence.shut())
            .await
            .expect("a closed fence is shut at once");
    }

    #[tokio::test]
    async fn opened_waits_for_the_election_and_an_always_open_fence_never_shuts() {
        let fence = Fence::closed();
        let opened = tokio::spawn({
            let fence = fence.clone();
            async move { fence.opened().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!opened.is_finished(), "nothing opened the fence yet");
        fence.open_until(SystemTime::now() + Duration::from_secs(60));
        tokio::time::timeout(Duration::from_secs(5), opened)
            .await
            .expect("opened once the election opens the fence")
            .expect("the task ran");

        let always = Fence::always();
        assert!(always.allows());
        assert!(
            tokio::time::timeout(Duration::from_millis(100), always.shut())
                .await
                .is_err(),
            "the only replica's fence never shuts"
        );
    }
}
