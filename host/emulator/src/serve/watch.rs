//! Watch streams: replay from a resourceVersion, live events, bookmarks, and in-stream 410s.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::kinds::resources::ResourceType;
use crate::state::shared::Shared;
use crate::store::{Event, EventType};
use crate::wire::selector::{FieldSelector, LabelSelector};
use crate::wire::shard_selector::ShardSelector;
use crate::wire::stored::Stored;

/// What one watch request asked for.
#[derive(Debug, Clone)]
pub struct WatchParams {
    /// The served resource type (decides `apiVersion` on the wire).
    pub rt: ResourceType,
    /// Only this namespace, if set.
    pub ns: Option<String>,
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `shardSelector` (empty: not given, or not served).
    pub shard: ShardSelector,
    /// `resourceVersion` to resume after; `None` or 0 means "send current state first".
    pub rv: Option<u64>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
    /// `sendInitialEvents=true`: synthetic ADDED events then the `initial-events-end` bookmark.
    pub send_initial: bool,
    /// Serve `PartialObjectMetadata` instead of full objects.
    pub metadata_only: bool,
    /// Serve each object as a one-row `Table` (what `kubectl get -w` asks for).
    pub table: Option<crate::serve::table::Include>,
}

impl WatchParams {
    fn selects(&self, obj: &Stored) -> bool {
        obj.selected_by(&self.labels, &self.fields, &self.shard)
    }

    /// What this watcher sees of an event: a change that moves an object into or out of the
    /// selectors is an ADDED or DELETED, as kube-apiserver's watch cache reports it.
    fn classify(&self, ev: &Event) -> Option<EventType> {
        if !self.rt.stores_at(&ev.key.res) || self.ns.as_ref().is_some_and(|ns| *ns != ev.key.ns) {
            return None;
        }
        let now = self.selects(&ev.object);
        match ev.kind {
            EventType::Modified => {
                let before = ev.prev.as_ref().is_some_and(|p| self.selects(p));
                match (before, now) {
                    (true, true) => Some(EventType::Modified),
                    (false, true) => Some(EventType::Added),
                    (true, false) => Some(EventType::Deleted),
                    (false, false) => None,
                }
            }
            kind => now.then_some(kind),
        }
    }

    /// The wire line for an object, its stored text copied as it is when it is served as stored.
    fn encode(&self, obj: &Stored, kind: EventType) -> Bytes {
        if self.table.is_none() && !self.metadata_only && served_as_stored(&self.rt, obj) {
            stored_line(kind.as_str(), &obj.text())
        } else {
            line(kind.as_str(), &self.render(&obj.value()))
        }
    }

    fn render(&self, obj: &Value) -> Value {
        if let Some(include) = self.table {
            let meta = json!({"resourceVersion": crate::wire::object::resource_version(obj)});
            return crate::serve::table::render(&self.rt, &[obj], meta, include);
        }
        if self.metadata_only {
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))})
        } else {
            crate::kinds::resources::serve(&self.rt, obj)
        }
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            if let Some(info) = self.shard.info() {
                meta["shardInfo"] = info;
            }
        }
        let (api_version, kind) = if self.metadata_only {
            (
                "meta.k8s.io/v1".to_string(),
                "PartialObjectMetadata".to_string(),
            )
        } else {
            (self.rt.api_version(), self.rt.kind.clone())
        };
        line(
            "BOOKMARK",
            &json!({"apiVersion": api_version, "kind": kind, "metadata": meta}),
        )
    }
}

/// Whether `rt` serves `obj` exactly as it is stored (same `apiVersion` and `kind`, not an
/// events.k8s.io Event, whose fields are renamed).
pub fn served_as_stored(rt: &ResourceType, obj: &Stored) -> bool {
    let head = obj.head();
    !rt.is_events_v1()
        && head.api_version.as_deref() == Some(rt.api_version().as_str())
        && head.kind.as_deref() == Some(rt.kind.as_str())
}

/// The line [`line`] writes, around an object's JSON text (keys in the same order).
fn stored_line(kind: &str, text: &[u8]) -> Bytes {
    let mut s = Vec::with_capacity(text.len() + kind.len() + 24);
    s.extend_from_slice(b"{\"object\":");
    s.extend_from_slice(text);
    s.extend_from_slice(b",\"type\":\"");
    s.extend_from_slice(kind.as_bytes());
    s.extend_from_slice(b"\"}\n");
    Bytes::from(s)
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": kind, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

/// The in-stream error kube-apiserver sends when a resourceVersion is too old.
fn gone(message: &str) -> Bytes {
    line(
        "ERROR",
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": "Expired", "code": 410}),
    )
}

fn stream_response(rx: futures::channel::mpsc::Receiver<Bytes>) -> Response {
    let body = Body::from_stream(rx.map(Ok::<_, Infallible>));
    Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-cache, private")
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Start a watch: the response streams until timeout, client disconnect, or `drop_watches`.
pub fn start(shared: Arc<Shared>, params: WatchParams) -> Response {
    let (mut tx, rx) = futures::channel::mpsc::channel::<Bytes>(256);
    let mut drop_rx = shared.drop_rx();
    let interval = shared.bookmark_interval();
    let setup = {
        let store = shared.lock();
        let start_rv = store.current_rv();
        match params.rv.filter(|rv| *rv != 0 && !params.send_initial) {
            None => {
                let initial: Vec<Arc<Stored>> = store
                    .list(&params.rt.key(), params.ns.as_deref())
                    .into_iter()
                    .filter(|o| params.selects(o))
                    .collect();
                Ok((initial, Vec::new(), store.subscribe(), start_rv))
            }
            Some(rv) => store
                .watch_from(rv)
                .map(|(replay, sub)| (Vec::new(), replay, sub, rv)),
        }
    };
    let (initial, replay, mut sub, start_rv) = match setup {
        Ok(s) => s,
        Err(e) => {
            let msg = e.to_string();
            tokio::spawn(async move {
                let _ = tx.send(gone(&msg)).await;
            });
            return stream_response(rx);
        }
    };
    tokio::spawn(async move {
        let mut last_rv = start_rv;
        for obj in initial {
            if tx
                .send(params.encode(&obj, EventType::Added))
                .await
                .is_err()
            {
                return;
            }
        }
        if params.send_initial
            && params.bookmarks
            && tx.send(params.bookmark(last_rv, true)).await.is_err()
        {
            return;
        }
        for ev in replay {
            last_rv = ev.rv;
            if let Some(kind) = params.classify(&ev)
                && tx.send(params.encode(&ev.object, kind)).await.is_err()
            {
                return;
            }
        }
        let deadline = tokio::time::sleep(params.timeout.unwrap_or(Duration::from_secs(3600 * 24)));
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                ev = sub.recv() => match ev {
                    Ok(ev) => {
                        last_rv = ev.rv;
                        if let Some(kind) = params.classify(&ev) && tx.send(params.encode(&ev.object, kind)).await.is_err() {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(n)) => {
                        tracing::debug!(missed = n, "watcher fell behind the event history; ending with 410");
                        let _ = tx.send(gone(&format!("too old resource version: {last_rv}"))).await;
                        return;
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = ticker.tick(), if params.bookmarks => {
                    if tx.send(params.bookmark(last_rv, false)).await.is_err() {
                        return;
                    }
                }
                _ = &mut deadline => return,
                _ = drop_rx.changed() => return,
            }
        }
    });
    stream_response(rx)
}
