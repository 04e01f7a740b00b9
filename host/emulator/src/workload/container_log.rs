//! A simulated container's log, as far as the simulated kubelet can honestly tell it.
//!
//! Nothing runs in a simulated container, so it has no output of its own. Its log is either
//! what its command would print when that command is a literal `echo` (`workload::echo`, with
//! the container's environment read from its spec, the ConfigMaps and Secrets it names and the
//! Pod's own fields), or else the lifecycle lines the kubelet knows, marked as the emulator's:
//! when the container started, from which image, and how it exited. Which container state has
//! a log, and the errors for one that has none, are the kubelet's (`validateContainerLogStatus`).

use base64::Engine;
use serde_json::Value;

use crate::kinds::resources::ResKey;
use crate::store::{ObjKey, Store};
use crate::wire::object;
use crate::workload::echo::{self, Env};

/// One line of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// When it was written (RFC 3339, as the container's status says).
    pub at: String,
    /// Its text, without the newline.
    pub text: String,
    /// Whether a newline ends it (the last line of an `echo -n` has none).
    pub newline: bool,
}

/// A container's log now.
#[derive(Debug)]
pub struct Log {
    /// Its lines so far.
    pub lines: Vec<Line>,
    /// Whether the container is running (a follower waits for more).
    pub running: bool,
}

/// The spec of the container `name` among the Pod's containers, init containers and ephemeral
/// containers.
pub fn container_spec<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|list| pod.pointer(&format!("/spec/{list}"))?.as_array())
        .flatten()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
}

fn container_status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|list| pod.pointer(&format!("/status/{list}"))?.as_array())
    .flatten()
    .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
}

/// The log of `container` in `pod` (its previous instance when `previous`), or the kubelet's
/// message for a container that has none yet (answered as 400 Bad Request).
pub fn read(store: &Store, pod: &Value, container: &str, previous: bool) -> Result<Log, String> {
    let pod_name = object::name(pod);
    let status = container_status(pod, container)
        .ok_or_else(|| format!("container {container:?} in pod {pod_name:?} is not available"))?;
    let state = |k: &str| status.pointer(&format!("/state/{k}"));
    if previous {
        // The simulated kubelet never restarts a container: there is never a previous one.
        return Err(format!(
            "previous terminated container {container:?} in pod {pod_name:?} not found"
        ));
    }
    let (started, finished) = match (state("running"), state("terminated"), state("waiting")) {
        (Some(running), _, _) => (running.get("startedAt"), None),
        (None, Some(terminated), _) => (terminated.get("startedAt"), Some(terminated)),
        (None, None, Some(waiting)) => {
            let reason = waiting.get("reason").and_then(Value::as_str).unwrap_or("");
            let why = match reason {
                "ErrImagePull" => "image can't be pulled",
                "ImagePullBackOff" => "trying and failing to pull image",
                other => other,
            };
            return Err(format!(
                "container {container:?} in pod {pod_name:?} is waiting to start: {why}"
            ));
        }
        (None, None, None) => {
            return Err(format!(
                "container {container:?} in pod {pod_name:?} is waiting to start - no logs yet"
            ));
        }
    };
    let started = started
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(object::now_rfc3339);
    let spec = container_spec(pod, container).cloned().unwrap_or_default();
    let lines = match printed(store, pod, &spec) {
        Some(text) => split(&started, &text),
        None => lifecycle(&spec, &started, finished),
    };
    Ok(Log {
        lines,
        running: finished.is_none(),
    })
}

/// What the container's command prints, if it is a literal echo.
fn printed(store: &Store, pod: &Value, spec: &Value) -> Option<String> {
    let env = environment(store, pod, spec)?;
    let words = |k: &str| -> Vec<Value> {
        spec.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    // Without `command` the image's entrypoint runs, which the simulation does not know.
    let command = words("command");
    if command.is_empty() {
        return None;
    }
    let argv = command
        .iter()
        .chain(words("args").iter())
        .map(|w| echo::expand(w.as_str()?, &env))
        .collect::<Option<Vec<String>>>()?;
    echo::output(&argv, &env)
}

/// Output text as log lines, all written at `at`.
fn split(at: &str, text: &str) -> Vec<Line> {
    text.split_inclusive('\n')
        .map(|l| Line {
            at: at.to_string(),
            text: l.trim_end_matches('\n').to_string(),
            newline: l.ends_with('\n'),
        })
        .collect()
}

/// The lines the simulated kubelet can say of a container that printed nothing it can know.
fn lifecycle(spec: &Value, started: &str, finished: Option<&Value>) -> Vec<Line> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let name = s(spec, "name");
    let line = |at: String, text: String| Line {
        at,
        text: format!("[weir-emulator] {text}"),
        newline: true,
    };
    let mut lines = vec![line(
        started.to_string(),
        format!(
            "simulated container {name:?} started from image {:?}; nothing runs in it, so its log holds only these lines",
            s(spec, "image")
        ),
    )];
    if let Some(t) = finished {
        let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
        let at = t
            .get("finishedAt")
            .and_then(Value::as_str)
            .map_or_else(|| started.to_string(), String::from);
        lines.push(line(
            at,
            format!(
                "simulated container {name:?} exited with code {code} ({})",
                s(t, "reason")
            ),
        ));
    }
    lines
}

/// The container's environment as its spec sets it: `envFrom` sources, then `env` entries in
/// order (each value's `$(NAME)` expanded against those before it), plus `HOSTNAME`. `None`
/// when a source it must read (a ConfigMap or Secret not marked optional) is missing.
fn environment(store: &Store, pod: &Value, spec: &Value) -> Option<Env> {
    let ns = object::namespace(pod);
    let mut env = Env::new();
    let hostname = pod
        .pointer("/spec/hostname")
        .and_then(Value::as_str)
        .unwrap_or(object::name(pod));
    env.insert("HOSTNAME".into(), Some(hostname.to_string()));
    let list = |k: &str| {
        spec.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for from in list("envFrom") {
        let prefix = from.get("prefix").and_then(Value::as_str).unwrap_or("");
        let (source, secret) = match (from.get("configMapRef"), from.get("secretRef")) {
            (Some(r), _) => (r, false),
            (None, Some(r)) => (r, true),
            (None, None) => continue,
        };
        match source_data(store, ns, source, secret) {
            Some(data) => {
                for (k, v) in data {
                    env.insert(format!("{prefix}{k}"), v);
                }
            }
            None if optional(source) => {}
            None => return None,
        }
    }
    for var in list("env") {
        let Some(name) = var.get("name").and_then(Value::as_str) else {
            continue;
        };
        let value = match (var.get("value"), var.get("valueFrom")) {
            (_, Some(from)) => match value_from(store, pod, from) {
                Source::Value(v) => v,
                Source::Unset => continue,
                Source::Missing => return None,
            },
            (Some(v), None) => echo::expand(v.as_str().unwrap_or(""), &env),
            (None, None) => Some(String::new()),
        };
        env.insert(name.to_string(), value);
    }
    Some(env)
}

fn optional(source: &Value) -> bool {
    source.get("optional").and_then(Value::as_bool) == Some(true)
}

/// A ConfigMap's `data` (or a Secret's, decoded) named by `source` in `ns`.
fn source_data(
    store: &Store,
    ns: &str,
    source: &Value,
    secret: bool,
) -> Option<Vec<(String, Option<String>)>> {
    let name = source.get("name").and_then(Value::as_str)?;
    let key = ObjKey {
        res: ResKey {
            group: String::new(),
            plural: if secret { "secrets" } else { "configmaps" }.into(),
        },
        ns: ns.to_string(),
        name: name.to_string(),
    };
    let obj = store.get(&key)?;
    let data = obj
        .get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Some(
        data.into_iter()
            .map(|(k, v)| {
                let text = v.as_str().unwrap_or("");
                let value = if secret {
                    base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .ok()
                        .and_then(|b| String::from_utf8(b).ok())
                } else {
                    Some(text.to_string())
                };
                (k, value)
            })
            .collect(),
    )
}

/// Where an `env[].valueFrom` leads.
enum Source {
    /// A value (`None`: one the simulation cannot read, as a resource limit's).
    Value(Option<String>),
    /// An optional source that is missing: the variable is not set.
    Unset,
    /// A required source that is missing: the container could not start in a cluster.
    Missing,
}

fn value_from(store: &Store, pod: &Value, from: &Value) -> Source {
    if let Some(field) = from.pointer("/fieldRef/fieldPath").and_then(Value::as_str) {
        return Source::Value(field_value(pod, field));
    }
    for (k, secret) in [("configMapKeyRef", false), ("secretKeyRef", true)] {
        let Some(r) = from.get(k) else { continue };
        let wanted = r.get("key").and_then(Value::as_str).unwrap_or("");
        let found = source_data(store, object::namespace(pod), r, secret)
            .and_then(|data| data.into_iter().find(|(key, _)| key == wanted));
        return match found {
            Some((_, v)) => Source::Value(v),
            None if optional(r) => Source::Unset,
            None => Source::Missing,
        };
    }
    Source::Value(None)
}

/// The downward API's value of `fieldPath`, where the Pod holds it.
fn field_value(pod: &Value, path: &str) -> Option<String> {
    let text = |p: &str| pod.pointer(p).and_then(Value::as_str).map(String::from);
    for map in ["labels", "annotations"] {
        if let Some(inner) = path.strip_prefix(&format!("metadata.{map}['")) {
            let key = inner.strip_suffix("']")?;
            return pod
                .pointer(&format!("/metadata/{map}"))?
                .get(key)?
                .as_str()
                .map(String::from);
        }
    }
    match path {
        "metadata.name" => text("/metadata/name"),
        "metadata.namespace" => text("/metadata/namespace"),
        "metadata.uid" => text("/metadata/uid"),
        "spec.nodeName" => text("/spec/nodeName"),
        "spec.serviceAccountName" => text("/spec/serviceAccountName"),
        "status.podIP" => text("/status/podIP"),
        "status.hostIP" => text("/status/hostIP"),
        _ => None,
    }
}
