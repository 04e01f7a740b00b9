//! The host's API client: a client-side rate limit shared fairly between plugins, and the
//! server's pushback (`429` with `Retry-After`) honoured.
//!
//! Every request takes a token from one bucket (`--kube-api-qps` per second, `--kube-api-burst`
//! at once). Each plugin's requests travel as their own flow ([`for_plugin`]); when the bucket
//! runs dry the waiting flows take turns ([`fair`]), so one plugin's burst cannot hold back
//! another plugin, or the host's own requests (its leader Lease). A `429 TooManyRequests` answer
//! with `Retry-After: N` holds every further request for `N` seconds (at most a minute), as
//! client-go does, so a throttled API server sees the host slow down instead of retry at once.
//! Requests wait in their own futures, not in kube's request buffer (which would line them all up
//! behind the first one waiting); long watches take one token to start and hold none.
//! Every request says `User-Agent: weir/VERSION` (unless the config names another), as client-go's
//! clients name themselves, so the API server's audit log, and a test's fault rules, can tell the
//! host's requests from everyone else's.
//!
//! A client derives from another through tower layers ([`derive()`]): a plugin's client is the
//! host's with its [`FlowLayer`], a fenced client adds the fence's layer
//! ([`crate::fence::FenceLayer`]), a sharded replica's parent informers the shard selector's
//! ([`crate::shard::share::SelectorLayer`]); each sends through the client it came from.
//! A member cluster's client is [`Rotating`]: its credentials are swapped under it, its
//! watches and limits kept.
//!
//! ## The default limit: 500 requests per second, bursts of 1,000, for the whole host
//! The API server protects itself: API Priority and Fairness gives the host's service account a
//! share of the server's concurrency, queues what exceeds it and answers `429` with `Retry-After`,
//! which the host obeys. The client-side limit is therefore a ceiling against a runaway host, not
//! the throttle that paces normal work. controller-runtime's 20/30 and client-go's 5/10 predate
//! APF, and kube-controller-manager's `--kube-api-qps 20` applies to each of its controllers'
//! own clients (dozens of them, several hundred requests per second together). A Weir host is
//! one client for many plugins: 500/1,000 is that order of magnitude for the whole host, about
//! 70 parents converging per second at seven requests each, and leaves a plugin alone on the host
//! paced by the server rather than by this bucket. `--kube-api-qps 0` lifts the limit (kube-rs
//! has none); the pushback still holds.

mod connect;
mod derive;
mod fair;
mod rotate;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use kube::client::ClientBuilder;
use kube::{Client, Config};
use tokio::time::Instant;
use tower::buffer::Buffer;
use tower::{BoxError, Layer, Service, ServiceExt};

pub use self::connect::{ConnectError, connect};
pub use self::derive::{Next, Sent, Wrap, WrapLayer, Wrapped, derive};
use self::fair::FairQueue;
pub use self::fair::Flow;
pub use self::rotate::Rotating;

/// The longest `Retry-After` honoured: a server asking for more is asked again after this.
const MAX_PUSHBACK: Duration = Duration::from_secs(60);

/// Requests the host's own buffer holds on their way to the connection.
const BUFFERED: usize = 1024;

/// How fast the host may call the API server, all plugins together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientLimits {
    /// Requests per second, sustained (0: no limit).
    pub qps: f64,
    /// Requests allowed at once above `qps`.
    pub burst: u32,
}

impl Default for ClientLimits {
    /// 500 requests per second, bursts of 1,000 (why: the module's documentation).
    fn default() -> Self {
        Self {
            qps: 500.0,
            burst: 1000,
        }
    }
}

impl std::fmt::Display for ClientLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.qps <= 0.0 {
            write!(f, "no client-side limit")
        } else {
            write!(f, "{} requests/s, bursts of {}", self.qps, self.burst)
        }
    }
}

/// The `User-Agent` of the host's requests.
pub const USER_AGENT: &str = concat!("weir/", env!("CARGO_PKG_VERSION"));

/// A client for `config` whose requests go through the fair rate limit and the pushback gate,
/// and carry [`USER_AGENT`] unless `config` sets a `User-Agent` of its own. Its own requests
/// are the host's flow; [`for_plugin`] gives each plugin a client of its own flow.
pub fn build(config: Config, limits: ClientLimits) -> Result<Client, kube::Error> {
    Ok(ClientBuilder::try_from(named(config))?
        .with_layer(&PushbackLayer::new(limits))
        .build())
}

/// `config` with [`USER_AGENT`] unless it names a `User-Agent` of its own.
fn named(mut config: Config) -> Config {
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
    config
}

/// A client sending through `client` (its connection, limit and pushback) whose requests are
/// `plugin`'s flow, so they take turns with the other plugins' when the host's bucket runs dry.
pub fn for_plugin(client: &Client, plugin: &str) -> Client {
    derive(client)
        .with_layer(&Flow::plugin(plugin).layer())
        .build()
}

/// A client sending through `client` whose requests are tenant namespace `namespace`'s flow,
/// whichever of its plugins sends them: a plugin's client made from it with [`for_plugin`] keeps
/// the tenant's flow (its layer runs after the plugin's), so a tenant takes one turn however
/// many plugins it serves, and another tenant's plugin of the same name takes its own.
pub fn for_tenant(client: &Client, namespace: &str) -> Client {
    derive(client)
        .with_layer(&Flow::tenant(namespace).layer())
        .build()
}

/// The tower layer of [`for_plugin`]: marks each request with a flow.
pub type FlowLayer = WrapLayer<Flow>;

impl Flow {
    /// The tower layer marking each request as this flow's.
    pub fn layer(self) -> FlowLayer {
        WrapLayer::new(self)
    }
}

impl Wrap for Flow {
    /// Sends the request on as this flow's (a request extension the host's gate reads).
    fn wrap(&self, mut request: http::Request<kube::client::Body>, next: Next) -> Sent {
        request.extensions_mut().insert(self.clone());
        next.send(request)
    }
}

/// The tower layer of [`build`].
#[derive(Clone)]
pub struct PushbackLayer {
    queue: Arc<FairQueue>,
}

impl PushbackLayer {
    /// One bucket, one fair queue and one pushback state for every request of the client.
    pub fn new(limits: ClientLimits) -> Self {
        Self {
            queue: FairQueue::new(limits.qps, limits.burst),
        }
    }
}

impl<S> Layer<S> for PushbackLayer
where
    S: Service<http::Request<kube::client::Body>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + Sync,
{
    type Service = Pushback<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Pushback {
            inner: Buffer::new(inner, BUFFERED),
            queue: self.queue.clone(),
        }
    }
}

/// The service of [`PushbackLayer`]: always ready; each request waits for its turn in its own
/// future, then goes to the connection through a buffer.
pub struct Pushback<S>
where
    S: Service<http::Request<kube::client::Body>>,
{
    inner: Buffer<http::Request<kube::client::Body>, S::Future>,
    queue: Arc<FairQueue>,
}

impl<S, B> Service<http::Request<kube::client::Body>> for Pushback<S>
where
    S: Service<http::Request<kube::client::Body>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + Sync,
    B: Send + 'static,
{
    type Response = http::Response<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let flow = request
            .extensions()
            .get::<Flow>()
            .cloned()
            .unwrap_or_else(Flow::host);
        let queue = self.queue.clone();
        let mut inner = self.inner.clone();
        Box::pin(async move {
            queue.admit(&flow).await;
            let response = inner.ready().await?.call(request).await?;
            if let Some(wait) = pushback(&response) {
                tracing::debug!(?wait, "the API server pushed back (429): holding requests");
                queue.hold(Instant::now() + wait);
            }
            Ok(response)
        })
    }
}

/// How long a `429` answer asks the client to wait (1 s without a readable `Retry-After`).
fn pushback<B>(response: &http::Response<B>) -> Option<Duration> {
    if response.status() != http::StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    let secs = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1);
    Some(Duration::from_secs(secs).min(MAX_PUSHBACK))
}

#[cfg(test)]
mod tests {
    use std::sync::{Mutex, PoisonError};

    use super::*;

    /// An API server answering every request at once (`429` with `Retry-After: 1` to paths
    /// ending in `/busy-server`), noting the path and time of each arrival.
    #[derive(Clone, Default)]
    struct Arrivals(Arc<Mutex<Vec<(String, Instant)>>>);

    impl Arrivals {
        fn paths(&self) -> Vec<String> {
            let log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            log.iter().map(|(p, _)| p.clone()).collect()
        }

        fn times(&self) -> Vec<Instant> {
            let log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            log.iter().map(|&(_, t)| t).collect()
        }
    }

    impl Service<http::Request<kube::client::Body>> for Arrivals {
        type Response = http::Response<kube::client::Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
            let path = request.uri().path().to_owned();
            let busy = path.ends_with("/busy-server");
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((path, Instant::now()));
            let mut response = http::Response::new(kube::client::Body::from(Vec::new()));
            if busy {
                *response.status_mut() = http::StatusCode::TOO_MANY_REQUESTS;
                response.headers_mut().insert(
                    http::header::RETRY_AFTER,
                    http::HeaderValue::from_static("1"),
                );
            }
            std::future::ready(Ok(response))
        }
    }

    fn client(arrivals: &Arrivals, limits: ClientLimits) -> Client {
        ClientBuilder::new(arrivals.clone(), "default")
            .with_layer(&PushbackLayer::new(limits))
            .build()
    }

    async fn send(client: &Client, path: &str) {
        let mut request = http::Request::new(kube::client::Body::from(Vec::new()));
        *request.uri_mut() = http::Uri::try_from(path).unwrap_or_default();
        let sent = client.send(request).await;
        assert!(sent.is_ok(), "{path}: {sent:?}");
    }

    #[tokio::test]
    async fn a_429_with_retry_after_holds_every_request_that_long() {
        let arrivals = Arrivals::default();
        let host = client(
            &arrivals,
            ClientLimits {
                qps: 1000.0,
                burst: 1000,
            },
        );
        let plugin = for_plugin(&host, "blog");
        send(&plugin, "/api/v1/busy-server").await;
        send(&host, "/api/v1/namespaces").await;
        let times = arrivals.times();
        assert!(times[1] - times[0] >= Duration::from_secs(1), "{times:?}");
    }

    /// Through the whole client stack (kube's request buffer included): with one token every
    /// 1000 s, the whole burst goes at once and the next request waits. The bounds are far
    /// apart (30 s against 1000 s), so a busy machine cannot make the test fail.
    #[tokio::test]
    async fn a_fresh_client_sends_its_whole_burst_at_once_and_then_waits() {
        let arrivals = Arrivals::default();
        let client = client(
            &arrivals,
            ClientLimits {
                qps: 0.001,
                burst: 2,
            },
        );
        for _ in 0..2 {
            let sent = tokio::time::timeout(Duration::from_secs(30), send(&client, "/api/v1/a"));
            assert!(sent.await.is_ok(), "a request of the burst of 2 waited");
        }
        let third = tokio::time::timeout(Duration::from_millis(200), send(&client, "/api/v1/a"));
        assert!(
            third.await.is_err(),
            "the request after the burst waits for a token"
        );
        assert_eq!(arrivals.paths().len(), 2);
    }

    /// Counted, not timed: however slow the machine, the quiet plugin's request waits for at
    /// most one of the busy plugin's (plus one already granted on its way to the server).
    #[tokio::test]
    async fn one_plugins_backlog_does_not_hold_back_another_plugins_request() {
        let arrivals = Arrivals::default();
        let host = client(
            &arrivals,
            ClientLimits {
                qps: 20.0,
                burst: 1,
            },
        );
        let (busy, quiet) = (for_plugin(&host, "busy"), for_plugin(&host, "quiet"));
        let busy_arrived = || {
            arrivals
                .paths()
                .iter()
                .filter(|p| *p == "/apis/busy")
                .count()
        };
        let mut backlog = tokio::task::JoinSet::new();
        for _ in 0..40 {
            let busy = busy.clone();
            backlog.spawn(async move { send(&busy, "/apis/busy").await });
        }
        while busy_arrived() == 0 {
            tokio::task::yield_now().await;
        }
        let before = busy_arrived();
        send(&quiet, "/apis/quiet").await;
        let waited_for = busy_arrived() - before;
        assert!(
            waited_for <= 2,
            "the quiet plugin's request waited for {waited_for} of the busy plugin's 40"
        );
        backlog.abort_all();
    }

    /// Two tenants' plugins of one name: without the tenants' flows they would be one flow.
    #[tokio::test]
    async fn a_tenants_backlog_does_not_hold_back_another_tenants_plugin_of_the_same_name() {
        let arrivals = Arrivals::default();
        let host = client(
            &arrivals,
            ClientLimits {
                qps: 20.0,
                burst: 1,
            },
        );
        let busy = for_plugin(&for_tenant(&host, "team-a"), "blog");
        let quiet = for_plugin(&for_tenant(&host, "team-b"), "blog");
        let busy_arrived = || {
            arrivals
                .paths()
                .iter()
                .filter(|p| *p == "/apis/team-a")
                .count()
        };
        let mut backlog = tokio::task::JoinSet::new();
        for _ in 0..40 {
            let busy = busy.clone();
            backlog.spawn(async move { send(&busy, "/apis/team-a").await });
        }
        while busy_arrived() == 0 {
            tokio::task::yield_now().await;
        }
        let before = busy_arrived();
        send(&quiet, "/apis/team-b").await;
        let waited_for = busy_arrived() - before;
        assert!(
            waited_for <= 2,
            "team B's blog waited for {waited_for} of team A's blog's 40 requests"
        );
        backlog.abort_all();
    }
}
