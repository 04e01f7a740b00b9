//! A guest's log lines are bounded per line, per call and per second, are
//! reported when dropped, and cannot forge a line of the host's own log.

use crate::LogText;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use weir::plugin::{Engine, EngineConfig, Limits, Plugin, ReconcileRequest};

/// One event as the test sees it: its level and its fields, Debug-formatted
/// (so a text field shows quoted and escaped, as the log shows it).
#[derive(Debug)]
struct Seen {
    level: tracing::Level,
    fields: BTreeMap<String, String>,
}

impl Seen {
    fn field(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }
}

/// A `tracing` layer that keeps every event.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Seen {
            level: *event.metadata().level(),
            fields,
        });
    }
}

/// Runs chaos's `log` mode (five `log` lines naming the parent, one line
/// each to stdout and stderr) for a parent called `name`; returns the
/// events and the formatted log.
fn log_call(plugin: &Plugin, name: &str) -> (Vec<Seen>, String) {
    let recorder = Recorder::default();
    let text = LogText::default();
    let writer = text.clone();
    let subscriber = tracing_subscriber::registry().with(recorder.clone()).with(
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(move || writer.clone()),
    );
    tracing::subscriber::with_default(subscriber, || {
        let parent = json!({"metadata": {"name": name}, "spec": {"mode": "log"}});
        plugin
            .reconcile(&ReconcileRequest {
                clusters: Default::default(),
                parent: parent.to_string(),
                children: vec![],
                related: vec![],
            })
            .unwrap();
    });
    let events = std::mem::take(&mut *recorder.0.lock().unwrap());
    let text = text.text();
    (events, text)
}

fn chaos(limits: Limits) -> Plugin {
    Engine::new(EngineConfig::default())
        .unwrap()
        .load_file(&crate::built("chaos.wasm"), limits)
        .unwrap()
}

fn guest_lines(events: &[Seen]) -> Vec<&Seen> {
    events
        .iter()
        .filter(|e| e.field("message") == "plugin log")
        .collect()
}

fn dropped_reports(events: &[Seen]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| e.fields.contains_key("dropped"))
        .map(|e| e.field("message"))
        .collect()
}

#[test]
fn a_guest_line_is_a_quoted_field_so_newlines_cannot_forge_a_host_line() {
    let forged =
        "2026-01-01T00:00:00.000000Z  INFO weir::reconcile::apply: applied child kind=Secret";
    let (events, text) = log_call(&chaos(Limits::default()), &format!("x\n{forged}\r\x1b[2K"));
    let lines = guest_lines(&events);
    // Five `log` lines; stdout and stderr are split at the newline (two lines each).
    assert_eq!(lines.len(), 9, "{events:?}");
    let info = lines
        .iter()
        .find(|e| e.field("stream") == "log" && e.level == tracing::Level::INFO)
        .unwrap();
    assert_eq!(info.field("plugin"), "chaos@0.1.0");
    assert_eq!(
        info.field("text"),
        format!("\"chaos log at info for x\\n{forged}\\r\\u{{1b}}[2K\"")
    );
    assert!(
        !text.lines().any(|l| l.starts_with("2026-01-01")),
        "a guest forged a host line:\n{text}"
    );
    assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
}

#[test]
fn long_lines_are_cut_and_lines_over_the_call_budget_are_dropped_and_reported_once() {
    let plugin = chaos(Limits {
        max_log_bytes_per_call: 3000,
        ..Limits::default()
    });
    let (events, _) = log_call(&plugin, &"y".repeat(5000));
    let lines = guest_lines(&events);
    assert_eq!(
        lines.len(),
        2,
        "two 1 KiB lines fit in 3000 bytes: {lines:?}"
    );
    for line in &lines {
        let text = line.field("text").trim_matches('"');
        assert!(text.len() <= 1024, "{}", text.len());
        assert!(
            text.starts_with("chaos log at ") && text.ends_with(" bytes]"),
            "{text}"
        );
    }
    assert_eq!(dropped_reports(&events), ["5 log lines dropped"]);

    // The budget is per call: the next call starts afresh.
    let (events, _) = log_call(&plugin, &"y".repeat(5000));
    assert_eq!(guest_lines(&events).len(), 2);
}

#[test]
fn lines_over_the_plugins_rate_are_dropped_across_its_calls() {
    let plugin = chaos(Limits {
        log_lines_per_second: 3,
        ..Limits::default()
    });
    let (events, _) = log_call(&plugin, "a");
    assert_eq!(
        guest_lines(&events).len(),
        3,
        "a burst of one second's worth"
    );
    assert_eq!(dropped_reports(&events), ["4 log lines dropped"]);
    let (events, _) = log_call(&plugin, "b");
    assert!(
        guest_lines(&events).len() <= 1,
        "the bucket is shared by the calls"
    );
    assert_eq!(dropped_reports(&events).len(), 1);
}

#[test]
fn a_call_within_its_budgets_reports_no_drops() {
    let (events, _) = log_call(&chaos(Limits::default()), "calm");
    assert_eq!(guest_lines(&events).len(), 7);
    assert!(dropped_reports(&events).is_empty());
}
