//! The write-time leadership gate: a client whose writes stop the moment this replica's lease could run out.
//!
//! Stopping the workers when the lease is lost is not enough on its own: a reconcile in flight,
//! a request waiting in the client's rate limit or behind a `Retry-After`, or a guard task that
//! runs late on a busy machine could still send a write after another replica took the lease.
//! So every write of the controllers goes through a [`Fence`] (the renew deadline of client-go,
//! checked at the write itself): the election opens it until the step-down moment of the last
//! renewal it read ([`crate::leader`]), and a write is sent only before that moment. A write
//! still waiting for the client when the moment comes is dropped unsent and fails with
//! [`FenceError::NotLeading`]; the key is retried by whichever replica then leads. Reads and
//! watches are never fenced: a standby keeps its caches warm.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::Client;
use kube::client::Body;
use tokio::sync::watch;
use tower::{BoxError, Service};

/// A write was withheld.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    /// This replica's lease may have run out (or was never held): the write was not sent.
    #[error("{request} withheld: this replica may no longer hold the leader lease")]
    NotLeading {
        /// The `METHOD path` of the withheld request.
        request: String,
    },
}

/// Until when writes may be sent, in milliseconds since the Unix epoch (`u64::MAX`: always).
#[derive(Clone, Debug)]
pub struct Fence {
    deadline: Arc<watch::Sender<u64>>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Fence {
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

    /// Whether a write may be sent now.
    pub fn allows(&self) -> bool {
        now_ms() < *self.deadline.borrow()
    }

    /// Resolves once writes may no longer be sent (at the deadline, unless it moves on meanwhile).
    async fn shut(&self) {
        let mut deadline = self.deadline.subscribe();
        loop {
            let until = *deadline.borrow_and_update();
            let now = now_ms();
            if now >= until {
                return;
            }
            let wait = Duration::from_millis(until - now);
            tokio::select! {
                // The sender lives in `self`: `changed` cannot fail while this runs.
                _ = deadline.changed() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// A client sending `client`'s requests, its writes only while `fence` allows them.
pub fn fenced(client: Client, fence: Fence) -> Client {
    let namespace = client.default_namespace().to_owned();
    Client::new(Fenced { client, fence }, namespace)
}

/// The service of [`fenced`].
#[derive(Clone)]
struct Fenced {
    client: Client,
    fence: Fence,
}

type Sent = Result<http::Response<Body>, BoxError>;

impl Service<http::Request<Body>> for Fenced {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Sent> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let client = self.client.clone();
        let fence = self.fence.clone();
        let write = !matches!(
            *request.method(),
            http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
        );
        Box::pin(async move {
            if !write {
                return client.send(request).await.map_err(BoxError::from);
            }
            let withheld: BoxError = Box::new(FenceError::NotLeading {
                request: format!("{} {}", request.method(), request.uri().path()),
            });
            if !fence.allows() {
                return Err(withheld);
            }
            tokio::select! {
                biased;
                () = fence.shut() => Err(withheld),
                sent = client.send(request) => sent.map_err(BoxError::from),
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
}
