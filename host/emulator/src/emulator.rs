//! [`Emulator`], a running emulator: it starts, restarts and stops the server, and hands a
//! client what it needs (URL, kube client, kubeconfig, tokens, the request log, fault rules);
//! [`Error`], why it could not start or write its kubeconfig.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::config::Kubeconfig;

use crate::kubeconfig::{kubeconfig_for, url_of};
use crate::serve::server::Serving;
use crate::state::auth;
use crate::state::config::{EmulatorConfig, RequestRecord};
use crate::state::faults::Faults;
use crate::state::persist::StateError;
use crate::state::request_log::RequestCursor;
use crate::state::shared::Shared;
use crate::store::writes::StoredWrites;

/// Why the emulator could not start or write its kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The state file could not be loaded or written.
    #[error("the emulator's state could not be kept")]
    State(#[from] StateError),
    /// The certificates of a secure emulator could not be made.
    #[error("could not set up the emulator's TLS")]
    Tls(#[from] auth::TlsError),
    /// The kube client's configuration for a secure emulator was refused.
    #[error("could not configure a kube client for the emulator")]
    ClientConfig(#[source] kube::config::KubeconfigError),
    /// Binding the listening socket failed.
    #[error("could not bind 127.0.0.1:{port}")]
    Bind {
        /// The requested port (0 = any).
        port: u16,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Building the kube client for the emulator failed.
    #[error("could not build a kube client for {url}")]
    Client {
        /// The emulator's URL.
        url: String,
        /// The underlying kube error.
        #[source]
        source: kube::Error,
    },
    /// The emulator's own URL did not parse (cannot happen for a bound socket address).
    #[error("invalid emulator URL {url}")]
    Url {
        /// The URL.
        url: String,
        /// The parse error.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// The kubeconfig could not be serialized.
    #[error("could not serialize the kubeconfig")]
    Serialize(#[source] serde_saphyr::SerializeError),
    /// The kubeconfig file could not be written.
    #[error("could not write the kubeconfig to {path}")]
    Write {
        /// Destination path.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A running emulator; dropping it without [`Emulator::shutdown`] stops the server task too
/// (without writing the state file).
pub struct Emulator {
    addr: SocketAddr,
    shared: Arc<Shared>,
    client: kube::Client,
    /// The server task; `None` while a restart is down (or after one failed).
    serving: tokio::sync::Mutex<Option<Serving>>,
}

impl Emulator {
    /// Bind 127.0.0.1 and serve until [`Emulator::shutdown`], from the state file when one is
    /// configured and exists.
    pub async fn start(config: EmulatorConfig) -> Result<Emulator, Error> {
        let port = config.port;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| Error::Bind { port, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| Error::Bind { port, source })?;
        let auth = if config.secure {
            Some(auth::Auth::new()?)
        } else {
            None
        };
        let shared = Shared::new(config, auth)?;
        shared.set_address(addr.to_string());
        let url = url_of(addr, shared.auth.is_some());
        let client = match &shared.auth {
            Some(auth) => {
                let config = kube::Config::from_custom_kubeconfig(
                    kubeconfig_for(&url, Some(auth)),
                    &kube::config::KubeConfigOptions::default(),
                )
                .await
                .map_err(Error::ClientConfig)?;
                kube::Client::try_from(config).map_err(|source| Error::Client {
                    url: url.clone(),
                    source,
                })?
            }
            None => client_for(&url)?,
        };
        let serving = Serving::start(listener, shared.clone());
        tracing::info!(%url, secure = shared.auth.is_some(), "Kubernetes API emulator listening");
        let emulator = Emulator {
            addr,
            shared,
            client,
            serving: tokio::sync::Mutex::new(Some(serving)),
        };
        Ok(emulator)
    }

    /// Restart the whole emulator, as a kube-apiserver restart looks to its clients: every watch
    /// and connection ends, new connections are refused for `down`, then the same address serves
    /// again what was stored, through the state file when one is configured (written, then read
    /// back). Watch history is not kept: resuming from an earlier resourceVersion answers 410.
    /// The fault rules, their counts and the request log survive; the workload simulation
    /// starts over on the kept objects. On an error the emulator stays down.
    pub async fn restart(&self, down: Duration) -> Result<(), Error> {
        let mut serving = self.serving.lock().await;
        if let Some(mut running) = serving.take() {
            running.stop(&self.shared).await;
        }
        let kept = self.shared.save()?;
        tracing::info!(url = %self.url(), ?down, "emulator restarting");
        tokio::time::sleep(down).await;
        self.shared.reload(kept)?;
        let listener = self.rebind().await?;
        *serving = Some(Serving::start(listener, self.shared.clone()));
        tracing::info!(url = %self.url(), "emulator serving again");
        Ok(())
    }

    /// Bind the address served before a restart again, retrying for a while if another socket
    /// holds it (a client's ephemeral port can, briefly).
    async fn rebind(&self) -> Result<tokio::net::TcpListener, Error> {
        let mut attempts = 0;
        loop {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(listener) => return Ok(listener),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && attempts < 50 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(source) => {
                    return Err(Error::Bind {
                        port: self.addr.port(),
                        source,
                    });
                }
            }
        }
    }

    /// Write the store to the state file now (nothing without one), while serving.
    pub fn save(&self) -> Result<(), Error> {
        if self.shared.config.state_file.is_some() {
            self.shared.save()?;
        }
        Ok(())
    }

    /// `http://127.0.0.1:PORT`, or `https://` when secure.
    pub fn url(&self) -> String {
        url_of(self.addr, self.shared.auth.is_some())
    }

    /// The CA certificate (PEM) a client of a secure emulator trusts; `None` when not secure.
    pub fn ca_pem(&self) -> Option<&str> {
        self.shared
            .auth
            .as_ref()
            .map(|a| a.certificates.ca_pem.as_str())
    }

    /// The static admin token of a secure emulator (the superuser group `system:masters`).
    pub fn admin_token(&self) -> Option<&str> {
        self.shared.auth.as_ref().map(|a| a.admin_token())
    }

    /// A token for the ServiceAccount `namespace/name`, as the TokenRequest API issues one
    /// (valid for an hour, and while the account exists); `None` when not secure or when the
    /// account does not exist.
    pub fn service_account_token(&self, namespace: &str, name: &str) -> Option<String> {
        let auth = self.shared.auth.as_ref()?;
        let review = auth.token_request(&self.shared.lock(), namespace, name, b"{}")?;
        review["status"]["token"].as_str().map(String::from)
    }

    /// A kube client talking to this emulator (default namespace `default`; the admin token
    /// when secure).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A kubeconfig with one context, `weir-emulator`, pointing here.
    ///
    /// Secure: the cluster has the CA as `certificate-authority-data` and the user the admin
    /// token. Otherwise the user entry has an empty `user: {}` (the Python client rejects an
    /// entry without the key) and the cluster says `insecure-skip-tls-verify: true`
    /// (client-node refuses an `http://` server otherwise; kubectl ignores it for plain HTTP).
    pub fn kubeconfig(&self) -> Kubeconfig {
        kubeconfig_for(&self.url(), self.shared.auth.as_ref())
    }

    /// Write [`Emulator::kubeconfig`] as YAML to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), Error> {
        let yaml = serde_saphyr::to_string(&self.kubeconfig()).map_err(Error::Serialize)?;
        std::fs::write(path, yaml).map_err(|source| Error::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Every request the request log keeps (the last [`EmulatorConfig::request_log`]), oldest
    /// first. A reader that polls should use [`Emulator::requests_since`] instead.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.requests()
    }

    /// A cursor past every request served so far, for [`Emulator::requests_since`].
    pub fn request_cursor(&self) -> RequestCursor {
        self.shared.request_cursor()
    }

    /// The requests served since `cursor` (those the log already dropped are skipped), oldest
    /// first, moving `cursor` past them.
    pub fn requests_since(&self, cursor: &mut RequestCursor) -> Vec<RequestRecord> {
        self.shared.requests_since(cursor)
    }

    /// The fault rules this emulator applies to requests: `set` them, `clear` them.
    pub fn faults(&self) -> &Faults {
        &self.shared.config.faults
    }

    /// Forget the request log (cursors stay valid).
    pub fn clear_requests(&self) {
        self.shared.clear_requests()
    }

    /// End every open watch stream now (clients see the stream close and re-watch).
    pub fn drop_watches(&self) {
        self.shared.drop_watches()
    }

    /// Forget the watch history: resuming from any earlier resourceVersion answers 410.
    pub fn compact(&self) {
        self.shared.lock().compact()
    }

    /// The changes stored since the emulator started, by resource and kind of change (created,
    /// modified, deleted), most first: every write that changed an object, whether a client's
    /// or the workload simulation's. A restart ([`Emulator::restart`]) starts them again.
    pub fn stored_writes(&self) -> Vec<StoredWrites> {
        self.shared.lock().writes()
    }

    /// Number of stored objects (all kinds, including the default namespaces).
    pub fn object_count(&self) -> usize {
        self.shared.lock().len()
    }

    /// Stop serving: end watches, shut the server down gracefully, then write the state file if
    /// one is configured (a failure is logged: see [`Emulator::save`] to handle it).
    pub async fn shutdown(self) {
        if let Some(mut running) = self.serving.lock().await.take() {
            running.stop(&self.shared).await;
        }
        if self.shared.config.state_file.is_some()
            && let Err(e) = self.shared.save()
        {
            let e = anyhow::Error::new(e);
            tracing::error!(error = %format!("{e:#}"), "the emulator's state was not saved");
        }
    }
}

fn client_for(url: &str) -> Result<kube::Client, Error> {
    let uri: http::Uri = url.parse().map_err(|source| Error::Url {
        url: url.to_string(),
        source,
    })?;
    let config = kube::Config::new(uri);
    kube::Client::try_from(config).map_err(|source| Error::Client {
        url: url.to_string(),
        source,
    })
}
