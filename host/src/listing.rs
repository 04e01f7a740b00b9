//! `weir plugins`: what a running host serves, fetched from its `/plugins` endpoint.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde::Deserialize;

/// Why the listing could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    /// Nothing answers at the address.
    #[error("cannot connect to the host's operations port at {addr}")]
    Connect {
        /// The address.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP exchange failed.
    #[error("GET http://{addr}/plugins failed")]
    Http {
        /// The address.
        addr: String,
        /// hyper's error.
        #[source]
        source: hyper::Error,
    },
    /// The host answered with an error status.
    #[error("GET http://{addr}/plugins answered {status}")]
    Status {
        /// The address.
        addr: String,
        /// The status code.
        status: u16,
    },
    /// The answer is not the listing.
    #[error("GET http://{addr}/plugins: unexpected answer")]
    Decode {
        /// The address.
        addr: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
}

/// One served plugin, as `/plugins` lists it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Parent kind, `Kind.group`.
    pub kind: String,
    /// The component file.
    pub file: String,
    /// Hex sha256 of the file.
    pub sha256: String,
    /// When this version started serving.
    pub loaded_at: String,
    /// Reconciles by result.
    pub reconciles: std::collections::BTreeMap<String, u64>,
}

/// Fetches `/plugins` from the host's operations port at `addr` (`host:port`).
pub async fn fetch(addr: &str) -> Result<Vec<Listed>, ListingError> {
    let http = |source| ListingError::Http {
        addr: addr.to_owned(),
        source,
    };
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|source| ListingError::Connect {
            addr: addr.to_owned(),
            source,
        })?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(http)?;
    tokio::spawn(connection);
    let request = Request::get("/plugins")
        .header(hyper::header::HOST, addr)
        .body(Empty::<Bytes>::new());
    // A fixed path and a host:port header always make a valid request.
    let request = request.unwrap_or_default();
    let response = sender.send_request(request).await.map_err(http)?;
    if !response.status().is_success() {
        return Err(ListingError::Status {
            addr: addr.to_owned(),
            status: response.status().as_u16(),
        });
    }
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(http)?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|source| ListingError::Decode {
        addr: addr.to_owned(),
        source,
    })
}

/// The listing as an aligned table, one plugin per line.
pub fn table(plugins: &[Listed]) -> String {
    let mut rows = vec![
        [
            "NAME",
            "VERSION",
            "KIND",
            "SHA256",
            "LOADED AT",
            "RECONCILES",
            "FILE",
        ]
        .map(str::to_owned),
    ];
    for p in plugins {
        let count = |r: &str| p.reconciles.get(r).copied().unwrap_or(0);
        rows.push([
            p.name.clone(),
            p.version.clone(),
            p.kind.clone(),
            p.sha256.get(..12).unwrap_or(&p.sha256).to_owned(),
            p.loaded_at.clone(),
            format!(
                "{} ok, {} failed",
                count("success"),
                count("error") + count("refused")
            ),
            p.file.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_aligns_columns_and_sums_failures() {
        let listed: Vec<Listed> = serde_json::from_value(serde_json::json!([{
            "name": "blog", "version": "0.1.0", "kind": "Blog.weir.dev", "file": "/plugins/blog.wasm",
            "sha256": "24a12032b659c7b8aa", "loadedAt": "2026-11-30T10:00:00Z",
            "reconciles": {"success": 7, "error": 1, "refused": 2, "gone": 0}
        }]))
        .unwrap_or_default();
        let text = table(&listed);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[1].starts_with(
                "blog  0.1.0    Blog.weir.dev  24a12032b659  2026-11-30T10:00:00Z  7 ok, 3 failed"
            ),
            "{text}"
        );
        assert_eq!(lines[0].find("KIND"), lines[1].find("Blog.weir.dev"));
    }
}
