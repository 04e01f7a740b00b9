//! The host's API client: a client-side rate limit, and the server's pushback (`429` with `Retry-After`) honoured.
//!
//! Every request takes a token from one bucket (`qps` per second, `burst` at once; the defaults
//! are controller-runtime's 20/30, client-go's own are 5/10). A `429 TooManyRequests` answer with
//! `Retry-After: N` holds every further request of the client for `N` seconds (at most a minute),
//! as client-go does, so a throttled API server sees the host slow down instead of retry at once.
//! The wait happens in `poll_ready`, inside kube's request buffer: long watches hold no token.
//! Every request says `User-Agent: weir/VERSION` (unless the config names another), as client-go's
//! clients name themselves, so the API server's audit log, and a test's fault rules, can tell the
//! host's requests from everyone else's.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use kube::client::ClientBuilder;
use kube::{Client, Config};
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

use crate::reconcile::queue::TokenBucket;

/// The longest `Retry-After` honoured: a server asking for more is asked again after this.
const MAX_PUSHBACK: Duration = Duration::from_secs(60);

/// How fast the host may call the API server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientLimits {
    /// Requests per second, sustained.
    pub qps: f64,
    /// Requests allowed at once above `qps`.
    pub burst: u32,
}

impl Default for ClientLimits {
    /// controller-runtime's defaults: 20 requests per second, bursts of 30.
    fn default() -> Self {
        Self {
            qps: 20.0,
            burst: 30,
        }
    }
}

/// The `User-Agent` of the host's requests.
pub const USER_AGENT: &str = concat!("weir/", env!("CARGO_PKG_VERSION"));

/// A client for `config` whose requests go through the rate limit and the pushback gate, and
/// carry [`USER_AGENT`] unless `config` sets a `User-Agent` of its own.
pub fn build(mut config: Config, limits: ClientLimits) -> Result<Client, kube::Error> {
    if !config
        .headers
        .iter()
        .any(|(name, _)| name == http::header::USER_AGENT)
    {
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_static(USER_AGENT),
        ));
    }
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&PushbackLayer::new(limits))
        .build())
}

/// The shared state of one client's requests: the token bucket and the server's last pushback.
struct Gate {
    bucket: Mutex<TokenBucket>,
    hold_until: Mutex<Option<Instant>>,
}

impl Gate {
    /// How long the next request waits (and takes its token).
    fn admit(&self, now: Instant) -> Duration {
        let token = self
            .bucket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(now);
        let held = self
            .hold_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(now));
        token.max(held)
    }

    /// Notes a `429` answer's `Retry-After`.
    fn observe<B>(&self, response: &http::Response<B>) {
        if response.status() != http::StatusCode::TOO_MANY_REQUESTS {
            return;
        }
        let secs = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(1);
        let wait = Duration::from_secs(secs).min(MAX_PUSHBACK);
        tracing::debug!(?wait, "the API server pushed back (429): holding requests");
        let until = Instant::now() + wait;
        let mut hold = self
            .hold_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *hold = Some(hold.map_or(until, |t| t.max(until)));
    }
}

/// The tower layer of [`build`].
#[derive(Clone)]
pub struct PushbackLayer {
    gate: Arc<Gate>,
}

impl PushbackLayer {
    /// One bucket and one pushback state for every request of the client.
    pub fn new(limits: ClientLimits) -> Self {
        Self {
            gate: Arc::new(Gate {
                bucket: Mutex::new(TokenBucket::new(limits.qps, limits.burst)),
                hold_until: Mutex::new(None),
            }),
        }
    }
}

impl<S> Layer<S> for PushbackLayer {
    type Service = Pushback<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Pushback {
            inner,
            gate: self.gate.clone(),
            sleep: None,
            admitted: false,
        }
    }
}

/// The service of [`PushbackLayer`].
pub struct Pushback<S> {
    inner: S,
    gate: Arc<Gate>,
    sleep: Option<Pin<Box<Sleep>>>,
    admitted: bool,
}

impl<S, Req, B> Service<Req> for Pushback<S>
where
    S: Service<Req, Response = http::Response<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        loop {
            if self.admitted {
                return self.inner.poll_ready(cx);
            }
            if let Some(sleep) = &mut self.sleep {
                ready!(sleep.as_mut().poll(cx));
                self.sleep = None;
                self.admitted = true;
                continue;
            }
            let wait = self.gate.admit(Instant::now());
            if wait.is_zero() {
                self.admitted = true;
            } else {
                self.sleep = Some(Box::pin(tokio::time::sleep(wait)));
            }
        }
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.admitted = false;
        let gate = self.gate.clone();
        let response = self.inner.call(req);
        Box::pin(async move {
            let response = response.await?;
            gate.observe(&response);
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(qps: f64, burst: u32) -> Gate {
        Gate {
            bucket: Mutex::new(TokenBucket::new(qps, burst)),
            hold_until: Mutex::new(None),
        }
    }

    #[tokio::test]
    async fn a_429_with_retry_after_holds_every_request_that_long() {
        let g = gate(1000.0, 1000);
        let now = Instant::now();
        assert_eq!(g.admit(now), Duration::ZERO);
        let pushback = http::Response::builder()
            .status(429)
            .header("Retry-After", "3")
            .body(())
            .unwrap_or_default();
        g.observe(&pushback);
        let wait = g.admit(Instant::now());
        assert!(
            wait > Duration::from_millis(2900) && wait <= Duration::from_secs(3),
            "{wait:?}"
        );
        let ok = http::Response::builder()
            .status(200)
            .body(())
            .unwrap_or_default();
        g.observe(&ok);
        assert!(
            g.admit(Instant::now()) > Duration::from_millis(2900),
            "a success does not lift the hold early"
        );
    }

    /// An API server answering every request at once, noting when each arrived.
    #[derive(Clone, Default)]
    struct Arrivals(Arc<Mutex<Vec<Instant>>>);

    impl Service<http::Request<kube::client::Body>> for Arrivals {
        type Response = http::Response<kube::client::Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: http::Request<kube::client::Body>) -> Self::Future {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Instant::now());
            std::future::ready(Ok(http::Response::new(
                kube::client::Body::from(Vec::new()),
            )))
        }
    }

    /// Through the whole client stack (kube's request buffer included): with one token every
    /// 1000 s, the whole burst goes at once and the next request waits. The bounds are far
    /// apart (30 s against 1000 s), so a busy machine cannot make the test fail.
    #[tokio::test]
    async fn a_fresh_client_sends_its_whole_burst_at_once_and_then_waits() {
        let arrivals = Arrivals::default();
        let client = ClientBuilder::new(arrivals.clone(), "default")
            .with_layer(&PushbackLayer::new(ClientLimits {
                qps: 0.001,
                burst: 2,
            }))
            .build();
        let send = || {
            let mut request = http::Request::new(kube::client::Body::from(Vec::new()));
            *request.uri_mut() = http::Uri::from_static("/api/v1/namespaces");
            client.send(request)
        };
        for n in 1..=2 {
            let sent = tokio::time::timeout(Duration::from_secs(30), send()).await;
            assert!(
                matches!(sent, Ok(Ok(_))),
                "request {n} of the burst of 2 waited"
            );
        }
        let third = tokio::time::timeout(Duration::from_millis(200), send()).await;
        assert!(
            third.is_err(),
            "the request after the burst waits for a token"
        );
        let arrived = arrivals
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        assert_eq!(arrived, 2);
    }

    #[tokio::test]
    async fn requests_beyond_the_burst_wait_their_turn() {
        let g = gate(10.0, 2);
        let now = Instant::now();
        let waits: Vec<Duration> = (0..4).map(|_| g.admit(now)).collect();
        assert_eq!(waits[..2], [Duration::ZERO; 2]);
        assert_eq!(waits[2], Duration::from_millis(100));
        assert_eq!(waits[3], Duration::from_millis(200));
    }
}
