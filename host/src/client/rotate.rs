//! A client whose connection is swapped in place: credentials rotated without a new client.
//!
//! Everything built on a [`kube::Client`] (an informer's watches, the writers) holds that
//! client for its life. A member cluster's credentials rotate (a token reissued every few
//! minutes, a client certificate renewed): rebuilding the client would mean rebuilding all of
//! it, and its watches would list their kinds again. A [`Rotating`] client instead sends each
//! request through the connection current at the time ([`Rotating::rotate`] swaps it): requests
//! already sent finish on the old one (an open watch keeps streaming until it ends), every
//! later one (a watch resumed from its resourceVersion, a write) carries the new credentials.
//! The rate limit and the server's pushback sit above the swap, so a rotation keeps the
//! client's budget.
//!
//! The connection does not retry inside itself (kube's default retries a 429, 503 or 504 up
//! to 15 times, minutes in all): a member that fails says so at once, the pushback gate holds
//! what follows a `Retry-After`, and the work queue's backoff paces the next attempt, so one
//! failing member holds no reconcile, and no parent's deletion, for minutes unreported.

use std::sync::{Arc, PoisonError, RwLock};

use http::Request;
use kube::client::{Body, ClientBuilder};
use kube::{Client, Config};

use super::{ClientLimits, PushbackLayer, named};

/// A client and the handle that swaps its connection ([`Rotating::rotate`]).
#[derive(Clone)]
pub struct Rotating {
    client: Client,
    connection: Arc<RwLock<Client>>,
}

impl std::fmt::Debug for Rotating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rotating").finish_non_exhaustive()
    }
}

impl Rotating {
    /// A client for `config` limited by `limits` (as [`super::build`] makes one), whose
    /// connection [`Rotating::rotate`] can swap.
    pub fn build(config: Config, limits: ClientLimits) -> Result<Rotating, kube::Error> {
        let namespace = config.default_namespace.clone();
        let connection = Arc::new(RwLock::new(connect(config)?));
        let current = connection.clone();
        let send = tower::service_fn(move |request: Request<Body>| {
            let client = current
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            async move { client.send(request).await }
        });
        let client = ClientBuilder::new(send, namespace)
            .with_layer(&PushbackLayer::new(limits))
            .build();
        Ok(Rotating { client, connection })
    }

    /// The client: every clone of it sends through the connection current at each request.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Makes `config` (new credentials, a new CA) the connection of every later request. The
    /// default namespace stays the one the client was built with. On an error (a malformed
    /// certificate) the connection in use stays.
    pub fn rotate(&self, config: Config) -> Result<(), kube::Error> {
        let next = connect(config)?;
        *self
            .connection
            .write()
            .unwrap_or_else(PoisonError::into_inner) = next;
        Ok(())
    }
}

/// The connection of `config` alone (TLS, credentials, timeouts; no rate limit, no retry).
fn connect(mut config: Config) -> Result<Client, kube::Error> {
    config.default_retry = false;
    Ok(ClientBuilder::try_from(named(config))?.build())
}

#[cfg(test)]
#[path = "rotate_tests.rs"]
mod tests;
