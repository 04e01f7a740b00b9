//! Derives a client from a client through tower layers: the fence, the shard selector, a flow.
//!
//! A derived client sends through the client it came from (its connection, its rate limit and
//! pushback), after the layers it was built with: `derive(&client).with_layer(&a).with_layer(&b)`
//! hands each request to `b`, then `a`, then `client` (kube's [`ClientBuilder`] stacks each new
//! layer outside the ones before). A capability's layer is a [`WrapLayer`] of a [`Wrap`], which
//! says in one method what it does with a request on its way; the tower plumbing lives here.
//! The layers keep the waiting in each request's own future: a derived client's services are
//! always ready, so a request held back (by the rate limit below, say) holds back no other.
//!
//! Errors pass through unchanged: a layer's own error (a fence's
//! [`crate::fence::FenceError`]) reaches the caller as [`kube::Error::Service`], and an error of
//! the client below as the [`kube::Error`] it was.

use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Request, Response};
use kube::Client;
use kube::client::{Body, ClientBuilder};
use tower::util::BoxCloneService;
use tower::{BoxError, Layer, Service, ServiceExt};

/// What a layer's service answers: the response, once it comes.
pub type Sent = BoxFuture<'static, Result<Response<Body>, BoxError>>;

/// A builder of a client sending through `client` (its connection, rate limit and pushback, its
/// default namespace) and through the layers added to it with [`ClientBuilder::with_layer`].
pub fn derive(client: &Client) -> ClientBuilder<Next> {
    let through = client.clone();
    let send = tower::service_fn(move |request| {
        let client = through.clone();
        async move { client.send(request).await }
    });
    ClientBuilder::new(Next::new(send), client.default_namespace())
        .with_valid_until(*client.valid_until())
}

/// What one layer of a derived client does with each request: changes it, holds it back or
/// withholds it, and sends it on through `next`.
pub trait Wrap: Clone + Send + Sync + 'static {
    /// Sends `request` on through `next` (the rest of the stack), or answers it with an error.
    fn wrap(&self, request: Request<Body>, next: Next) -> Sent;
}

/// The rest of a derived client's stack, below a layer.
#[derive(Clone)]
pub struct Next(BoxCloneService<Request<Body>, Response<Body>, BoxError>);

impl Next {
    fn new<S>(service: S) -> Self
    where
        S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
    {
        Self(BoxCloneService::new(service.map_err(Into::into)))
    }

    /// Sends `request` through the rest of the stack, once it is ready.
    pub fn send(self, request: Request<Body>) -> Sent {
        Box::pin(self.0.oneshot(request))
    }
}

impl Service<Request<Body>> for Next {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = Sent;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Sent {
        self.0.call(request)
    }
}

/// The tower layer of a [`Wrap`].
#[derive(Clone, Debug)]
pub struct WrapLayer<W>(W);

impl<W: Wrap> WrapLayer<W> {
    /// A layer doing what `wrap` does to each request.
    pub fn new(wrap: W) -> Self {
        Self(wrap)
    }
}

impl<W, S> Layer<S> for WrapLayer<W>
where
    W: Wrap,
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    type Service = Wrapped<W>;

    fn layer(&self, inner: S) -> Wrapped<W> {
        Wrapped {
            wrap: self.0.clone(),
            next: Next::new(inner),
        }
    }
}

/// The service of a [`WrapLayer`]: always ready; each request goes to its [`Wrap`] with the
/// rest of the stack, which it waits for in its own future.
#[derive(Clone)]
pub struct Wrapped<W> {
    wrap: W,
    next: Next,
}

impl<W: Wrap> Service<Request<Body>> for Wrapped<W> {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = Sent;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Sent {
        self.wrap.wrap(request, self.next.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, PoisonError};

    use super::*;

    /// Notes its name on each request's `x-path` header, then sends it on.
    #[derive(Clone)]
    struct Note(&'static str);

    impl Wrap for Note {
        fn wrap(&self, mut request: Request<Body>, next: Next) -> Sent {
            let path = request
                .headers()
                .get("x-path")
                .and_then(|v| v.to_str().ok())
                .map_or_else(|| self.0.to_owned(), |p| format!("{p},{}", self.0));
            match http::HeaderValue::try_from(path) {
                Ok(value) => {
                    request.headers_mut().insert("x-path", value);
                    next.send(request)
                }
                Err(e) => Box::pin(async move { Err(BoxError::from(e)) }),
            }
        }
    }

    /// Withholds every request with an error of its own.
    #[derive(Clone)]
    struct Refuse;

    #[derive(Debug, thiserror::Error)]
    #[error("refused")]
    struct Refused;

    impl Wrap for Refuse {
        fn wrap(&self, _: Request<Body>, _: Next) -> Sent {
            Box::pin(async { Err(BoxError::from(Refused)) })
        }
    }

    /// A server that notes the `x-path` each request arrives with.
    fn server(seen: &Arc<Mutex<Vec<String>>>) -> Client {
        let seen = seen.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let path = request
                .headers()
                .get("x-path")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(path);
            async { Ok::<_, std::convert::Infallible>(Response::new(Body::empty())) }
        });
        Client::new(service, "team")
    }

    #[tokio::test]
    async fn a_derived_client_sends_through_its_layers_last_added_first_then_its_client() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let base = server(&seen);
        let derived = derive(&base)
            .with_layer(&WrapLayer::new(Note("inner")))
            .with_layer(&WrapLayer::new(Note("outer")))
            .build();
        assert_eq!(derived.default_namespace(), "team");
        let sent = derived.send(Request::new(Body::empty())).await;
        assert!(sent.is_ok(), "{sent:?}");
        let twice = derive(&derived)
            .with_layer(&WrapLayer::new(Note("again")))
            .build();
        let sent = twice.send(Request::new(Body::empty())).await;
        assert!(sent.is_ok(), "{sent:?}");
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(seen, ["outer,inner", "again,outer,inner"]);
    }

    #[tokio::test]
    async fn a_layers_error_reaches_the_caller_as_a_service_error_of_its_own_type() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let base = server(&seen);
        let refusing = derive(&base).with_layer(&WrapLayer::new(Refuse)).build();
        let derived = derive(&refusing)
            .with_layer(&WrapLayer::new(Note("outer")))
            .build();
        for client in [&refusing, &derived] {
            let sent = client.send(Request::new(Body::empty())).await;
            assert!(
                matches!(&sent, Err(kube::Error::Service(e)) if e.is::<Refused>()),
                "{sent:?}"
            );
        }
        assert!(
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty(),
            "no request passed the refusing layer"
        );
    }
}
