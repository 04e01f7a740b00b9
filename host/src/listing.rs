//! `weir plugins`: what a running host serves, fetched from its `/plugins` endpoint, and the
//! one type that endpoint's answer is written and read as ([`Listed`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};

use crate::rollout::{Phase, RolloutStatus};
use crate::shard::metrics::ShardStatus;

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

/// One served plugin, as `/plugins` lists it: the one wire type the operations server writes
/// and `weir plugins` reads.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Parent kind, `Kind.group`.
    pub kind: String,
    /// The component file.
    pub file: PathBuf,
    /// Hex sha256 of the file.
    pub sha256: String,
    /// When this version started serving (RFC 3339).
    pub loaded_at: String,
    /// Its caches hold their first full list.
    #[serde(default)]
    pub synced: bool,
    /// Kinds it declared that the API server does not serve (the plugin is not ready).
    #[serde(default)]
    pub unserved: Vec<String>,
    /// Reconciles by result.
    pub reconciles: BTreeMap<String, u64>,
    /// The candidate version being rolled out, or the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
    /// Why the candidate for this plugin's file was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_refused: Option<String>,
    /// This replica's shard and, when it coordinates, the members and their parents of this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardStatus>,
    /// What the policy's entry for the plugin widens (cluster-scoped parent, namespaces,
    /// Secret data), one line each (none: nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub widened: Vec<String>,
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
            "CANDIDATE",
            "WIDENED BY POLICY",
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
            p.file.display().to_string(),
            match (&p.rollout, &p.candidate_refused) {
                (_, Some(_)) => "refused".to_owned(),
                (Some(r), None) => r.cell(),
                (None, None) => String::new(),
            },
            p.widened.join("; "),
        ]);
    }
    let widths: Vec<usize> = (0..9)
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
    for p in plugins {
        out.push_str(&details(p));
    }
    out
}

/// Below the table: a refused candidate's reason, a rollback's reason, the first diffs in full.
fn details(p: &Listed) -> String {
    let mut out = String::new();
    if let Some(shard) = &p.shard {
        out.push_str(&format!("\n{}: {}\n", p.name, shard.line()));
    }
    if let Some(reason) = &p.candidate_refused {
        out.push_str(&format!("\n{}: candidate refused: {reason}\n", p.name));
    }
    let Some(r) = &p.rollout else { return out };
    if let Phase::RolledBack { reason } = &r.phase {
        out.push_str(&format!(
            "\n{} {}: rolled back {reason}\n",
            p.name, r.version
        ));
    }
    if !r.first_diffs.is_empty() {
        // Once promoted, the row is the candidate's own (`/plugins` lists what serves).
        let against = match r.phase {
            Phase::Promoted => "the version it replaced",
            _ => &p.version,
        };
        out.push_str(&format!(
            "\n{} {} against {against}: first differing reconciles\n",
            p.name, r.version
        ));
    }
    for d in &r.first_diffs {
        out.push_str(&format!("  {} ({})\n", d.parent, d.phase));
        for diff in &d.diffs {
            out.push_str(&format!("    {}: {}\n", diff.kind.as_str(), diff.detail));
        }
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

    #[test]
    fn a_coordinating_replica_lists_each_members_parents_and_its_moves_below_the_table() {
        let listed: Vec<Listed> = serde_json::from_value(serde_json::json!([{
            "name": "blog", "version": "0.1.0", "kind": "Blog.weir.dev", "file": "/plugins/blog.wasm",
            "sha256": "24a12032b659c7b8aa", "loadedAt": "2026-11-30T10:00:00Z", "reconciles": {},
            "shard": {"member": "weir-0", "mode": "labels", "coordinating": true, "members": ["weir-0", "weir-1"],
                      "ownedParents": {"weir-0": 20, "weir-1": 21},
                      "moves": {"assigned": 41, "drained": 3}}
        }, {
            "name": "other", "version": "0.1.0", "kind": "Other.example.com", "file": "/p/o.wasm",
            "sha256": "00", "loadedAt": "2026-11-30T10:00:00Z", "reconciles": {},
            "shard": {"member": "weir-1", "mode": "server-side", "coordinating": false}
        }]))
        .unwrap_or_default();
        let text = table(&listed);
        assert!(
            text.contains(
                "blog: shard member weir-0 (labels), coordinating: parents weir-0 20, weir-1 21; moves: 41 assigned, 3 drained"
            ),
            "{text}"
        );
        assert!(
            text.contains("other: shard member weir-1 (server-side)\n"),
            "{text}"
        );
    }

    #[test]
    fn what_the_policy_widens_for_a_plugin_is_its_last_column() {
        let listed: Vec<Listed> = serde_json::from_value(serde_json::json!([{
            "name": "config-propagation", "version": "0.1.0", "kind": "ConfigPropagation.example.weir.dev",
            "file": "/plugins/p.wasm", "sha256": "24a12032b659c7b8aa", "loadedAt": "2026-11-30T10:00:00Z",
            "reconciles": {"success": 1},
            "widened": ["cluster-scoped parent", "namespaces labelled team=a"]
        }]))
        .unwrap_or_default();
        let text = table(&listed);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with("WIDENED BY POLICY"), "{text}");
        assert!(
            lines[1].ends_with("cluster-scoped parent; namespaces labelled team=a"),
            "{text}"
        );
    }

    #[test]
    fn a_rollout_shows_its_phase_counts_and_first_diffs_below_the_table() {
        let listed: Vec<Listed> = serde_json::from_value(serde_json::json!([{
            "name": "blog", "version": "0.1.0", "kind": "Blog.weir.dev", "file": "/plugins/blog.wasm",
            "sha256": "24a12032b659c7b8aa", "loadedAt": "2026-11-30T10:00:00Z",
            "reconciles": {"success": 7},
            "rollout": {
                "file": "/plugins/candidates/blog.wasm", "version": "0.2.0", "sha256": "ff",
                "phase": {"name": "RolledBack", "reason": "in Canary 10%, candidate 0.2.0 failed"},
                "compared": 40, "differed": 4, "diffs": {"error": 4},
                "candidateFailures": {"trap": 4}, "servingFailures": {},
                "firstDiffs": [{"parent": "ns/b-0", "phase": "Canary 10%",
                    "diffs": [{"kind": "error", "detail": "serving: answered (3 children); candidate: trap (x)"}]}]
            }
        }]))
        .unwrap_or_default();
        let text = table(&listed);
        assert!(
            text.lines()
                .nth(1)
                .is_some_and(|l| l.ends_with("RolledBack 0.2.0: 40 compared, 4 differ, 4 failed")),
            "{text}"
        );
        assert!(
            text.contains("blog 0.2.0: rolled back in Canary 10%, candidate 0.2.0 failed"),
            "{text}"
        );
        assert!(
            text.contains("  ns/b-0 (Canary 10%)\n    error: serving: answered (3 children); candidate: trap (x)\n"),
            "{text}"
        );
    }
}
