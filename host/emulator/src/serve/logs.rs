//! A Pod's `/log` subresource: the options kube-apiserver checks, the container it picks, and
//! the simulated kubelet's answer (`workload::container_log`), whole or followed.
//!
//! `container`, `previous`, `timestamps`, `tailLines`, `limitBytes`, `sinceSeconds`,
//! `sinceTime` and `follow` are read; a Pod not yet bound to the node answers an empty log, and
//! a container without a log the kubelet's 400, as from a cluster.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::serve::request::Request;
use crate::state::shared::Shared;
use crate::store::{EventType, ObjKey};
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::object;
use crate::workload::container_log::{self, Line};

/// What a log request asks for (`PodLogOptions`).
#[derive(Debug, Default)]
struct Options {
    container: Option<String>,
    follow: bool,
    previous: bool,
    timestamps: bool,
    tail: Option<usize>,
    limit: Option<usize>,
    since: Option<Timestamp>,
}

fn number(req: &Request, name: &str) -> ApiResult<Option<i64>> {
    req.param(name)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|e| ApiError::bad_request(format!("invalid value {v:?} for {name}: {e}")))
        })
        .transpose()
}

/// The options of `req`, checked as `ValidatePodLogOptions` checks them (422 naming each field).
fn options(req: &Request, pod: &str) -> ApiResult<Options> {
    let tail = number(req, "tailLines")?;
    let limit = number(req, "limitBytes")?;
    let since_seconds = number(req, "sinceSeconds")?;
    let since_time = req
        .param("sinceTime")
        .map(|t| {
            t.parse::<Timestamp>().map_err(|e| {
                ApiError::bad_request(format!("invalid value {t:?} for sinceTime: {e}"))
            })
        })
        .transpose()?;
    let mut causes = Vec::new();
    if let Some(n) = tail.filter(|n| *n < 0) {
        causes.push((
            "tailLines".to_string(),
            format!("Invalid value: {n}: must be greater than or equal to 0"),
        ));
    }
    if let Some(n) = limit.filter(|n| *n < 1) {
        causes.push((
            "limitBytes".to_string(),
            format!("Invalid value: {n}: must be greater than 0"),
        ));
    }
    match (since_seconds, since_time) {
        (Some(_), Some(_)) => causes.push((
            String::new(),
            "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".to_string(),
        )),
        (Some(n), None) if n < 1 => causes.push((
            "sinceSeconds".to_string(),
            format!("Invalid value: {n}: must be greater than 0"),
        )),
        _ => {}
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "PodLogOptions", pod, causes));
    }
    let since = match (since_seconds, since_time) {
        (Some(n), _) => Some(Timestamp::now() - SignedDuration::from_secs(n)),
        (None, t) => t,
    };
    Ok(Options {
        container: req
            .param("container")
            .filter(|c| !c.is_empty())
            .map(String::from),
        follow: req.flag("follow"),
        previous: req.flag("previous"),
        timestamps: req.flag("timestamps"),
        tail: tail.map(|n| n as usize),
        limit: limit.map(|n| n as usize),
        since,
    })
}

fn names(pod: &Value, list: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(String::from))
        .collect()
}

/// The container a log request is for, as kube-apiserver picks it: the one named, or the
/// Pod's only container.
fn pick(pod: &Value, asked: Option<String>) -> ApiResult<String> {
    let name = object::name(pod);
    if let Some(c) = asked {
        return match container_log::container_spec(pod, &c) {
            Some(_) => Ok(c),
            None => Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {name}"
            ))),
        };
    }
    let containers = names(pod, "containers");
    match containers.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}"
        ))),
        _ => {
            let all: Vec<String> = ["initContainers", "containers", "ephemeralContainers"]
                .iter()
                .flat_map(|l| names(pod, l))
                .collect();
            Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                all.join(" ")
            )))
        }
    }
}

/// Writes lines as the kubelet streams them: `timestamps` prefixes each with its time (RFC 3339
/// with nanoseconds), `sinceSeconds`/`sinceTime` drop older ones, `limitBytes` ends the stream.
struct Writer {
    timestamps: bool,
    since: Option<Timestamp>,
    left: Option<usize>,
}

impl Writer {
    fn keeps(&self, line: &Line) -> bool {
        let at = line.at.parse::<Timestamp>().ok();
        self.since
            .is_none_or(|since| at.is_none_or(|at| at >= since))
    }

    fn write(&mut self, lines: &[Line]) -> Bytes {
        let mut out = Vec::new();
        for line in lines {
            if self.timestamps {
                out.extend_from_slice(nanos(&line.at).as_bytes());
                out.push(b' ');
            }
            out.extend_from_slice(line.text.as_bytes());
            if line.newline {
                out.push(b'\n');
            }
        }
        if let Some(left) = &mut self.left {
            out.truncate(*left);
            *left -= out.len();
        }
        Bytes::from(out)
    }

    fn done(&self) -> bool {
        self.left == Some(0)
    }
}

/// `2026-01-02T03:04:05Z` as the kubelet prints log times: `2026-01-02T03:04:05.000000000Z`.
fn nanos(at: &str) -> String {
    match at.parse::<Timestamp>() {
        Ok(t) => format!(
            "{}.{:09}Z",
            t.strftime("%Y-%m-%dT%H:%M:%S"),
            t.subsec_nanosecond()
        ),
        Err(_) => at.to_string(),
    }
}

fn text_response(body: Body) -> Response {
    Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "text/plain")
        .header(http::header::CACHE_CONTROL, "no-cache, private")
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Serve `GET pods/{name}/log` for the Pod at `key`.
pub fn serve(shared: Arc<Shared>, req: &Request, key: &ObjKey) -> ApiResult<Response> {
    let opts = options(req, &key.name)?;
    let store = shared.lock();
    let pod = store
        .get(key)
        .ok_or_else(|| ApiError::not_found("", "pods", &key.name))?;
    let container = pick(&pod, opts.container.clone())?;
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        // Not scheduled: kube-apiserver has no kubelet to ask and answers an empty log.
        return Ok(text_response(Body::empty()));
    }
    let log = container_log::read(&store, &pod, &container, opts.previous)
        .map_err(ApiError::bad_request)?;
    let mut writer = Writer {
        timestamps: opts.timestamps,
        since: opts.since,
        left: opts.limit,
    };
    let kept: Vec<Line> = log
        .lines
        .iter()
        .filter(|l| writer.keeps(l))
        .cloned()
        .collect();
    let from = opts.tail.map_or(0, |n| kept.len().saturating_sub(n));
    let first = writer.write(&kept[from..]);
    if !opts.follow || !log.running || writer.done() {
        return Ok(text_response(Body::from(first)));
    }
    let follower = Follower {
        shared: shared.clone(),
        key: key.clone(),
        uid: object::uid(&pod).to_string(),
        container,
        written: log.lines.len(),
        writer,
    };
    let events = store.subscribe();
    drop(store);
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    tokio::spawn(follower.run(first, events, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    });
    Ok(text_response(Body::from_stream(stream)))
}

/// A followed log of a running container: it ends when the container stops (with the lines
/// its end adds), the Pod goes, the client leaves or the emulator stops.
struct Follower {
    shared: Arc<Shared>,
    key: ObjKey,
    uid: String,
    container: String,
    written: usize,
    writer: Writer,
}

impl Follower {
    async fn run(
        mut self,
        first: Bytes,
        mut events: tokio::sync::broadcast::Receiver<Arc<crate::store::Event>>,
        tx: tokio::sync::mpsc::Sender<Bytes>,
    ) {
        if tx.send(first).await.is_err() {
            return;
        }
        let mut stop = self.shared.drop_rx();
        loop {
            let changed = tokio::select! {
                ev = events.recv() => match ev {
                    Ok(ev) if ev.key == self.key => Some(ev.kind == EventType::Deleted),
                    Ok(_) => None,
                    Err(RecvError::Lagged(_)) => Some(false),
                    Err(RecvError::Closed) => return,
                },
                () = tx.closed() => return,
                _ = stop.changed() => return,
            };
            match changed {
                None => continue,
                Some(true) => return,
                Some(false) => {}
            }
            let Some((more, running)) = self.more() else {
                return;
            };
            if !more.is_empty() && tx.send(more).await.is_err() {
                return;
            }
            if !running || self.writer.done() {
                return;
            }
        }
    }

    /// The lines written since the last look, and whether the container still runs; `None`
    /// once the Pod is gone or replaced.
    fn more(&mut self) -> Option<(Bytes, bool)> {
        let store = self.shared.lock();
        let pod = store.get(&self.key)?;
        if object::uid(&pod) != self.uid {
            return None;
        }
        let log = container_log::read(&store, &pod, &self.container, false).ok()?;
        let new: Vec<Line> = log
            .lines
            .iter()
            .skip(self.written)
            .filter(|l| self.writer.keeps(l))
            .cloned()
            .collect();
        self.written = self.written.max(log.lines.len());
        Some((self.writer.write(&new), log.running))
    }
}
