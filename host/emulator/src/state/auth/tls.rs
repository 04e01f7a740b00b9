//! HTTPS: a CA generated at start, the serving certificate it signs (for `127.0.0.1`,
//! `localhost` and the in-cluster names), and a listener that hands axum finished TLS
//! connections.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Why the certificates could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating a key or signing a certificate failed.
    #[error("could not generate the emulator's certificates")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the certificate or the protocol versions.
    #[error("could not configure TLS")]
    Config(#[from] rustls::Error),
}

/// The names the serving certificate is valid for: loopback, and what a pod calls its API
/// server (`KUBERNETES_SERVICE_HOST` may be either).
const SERVER_NAMES: &[&str] = &[
    "127.0.0.1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// The CA clients trust and the server's TLS configuration.
pub struct Certificates {
    /// The CA certificate, PEM (a kubeconfig's `certificate-authority-data`, a pod's `ca.crt`).
    pub ca_pem: String,
    acceptor: TlsAcceptor,
}

impl Certificates {
    /// A new CA (`weir-emulator-ca`) and a serving certificate signed by it.
    pub fn generate() -> Result<Certificates, TlsError> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "weir-emulator-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::from_params(&ca_params, &ca_key);

        let names: Vec<String> = SERVER_NAMES.iter().map(|s| s.to_string()).collect();
        let mut server_params = CertificateParams::new(names)?;
        server_params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        // OpenSSL's strict verification (Python 3.13's default) wants it.
        server_params.use_authority_key_identifier_extension = true;
        let server_key = KeyPair::generate()?;
        let server_cert = server_params.signed_by(&server_key, &issuer)?;

        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![server_cert.der().clone()], key)?;
        // axum serves HTTP/1.1 here: Go and kube-rs clients then keep to it.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Certificates {
            ca_pem: ca_cert.pem(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}

/// A listener whose connections have finished their TLS handshake; handshakes run in their own
/// tasks, so a client that never completes one delays no one. Dropping it closes the socket.
pub struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

/// How long a client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

impl TlsListener {
    /// Accept on `listener`, with the certificates of `certs`.
    pub fn new(listener: TcpListener, certs: &Certificates) -> std::io::Result<TlsListener> {
        let addr = listener.local_addr()?;
        let acceptor = certs.acceptor.clone();
        let (tx, ready) = tokio::sync::mpsc::channel(64);
        let accepting = tokio::spawn(async move {
            loop {
                let (mut tcp, peer) = match listener.accept().await {
                    Ok(conn) => conn,
                    Err(e) => {
                        tracing::debug!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                crate::wire::http_util::no_delay(&mut tcp);
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener {
            ready,
            addr,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accepting task only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.addr)
    }
}
