//! The plugins' log lines as the host emits them, recorded so that a test can check the caps.
//!
//! [`layer`] is installed beside the test log by [`crate::TestEnv::start`]; it keeps only the
//! host's `plugin log` events and its `log lines dropped` reports (target `weir::plugin::log`),
//! of every host in the process: a test picks its own plugin's by name.

use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::Context;

/// The target of the host's guest-log events.
const TARGET: &str = "weir::plugin::log";

/// One guest line the host emitted, or one report of lines it dropped.
#[derive(Clone, Debug, Default)]
pub struct PluginLine {
    /// When the host emitted it.
    pub at: Option<Instant>,
    /// `name@version` of the plugin.
    pub plugin: String,
    /// `log`, `stdout` or `stderr`; empty for a report of dropped lines.
    pub stream: String,
    /// The guest's text as the host's log prints it (quoted, control characters escaped).
    pub printed: String,
    /// Lines dropped, for a report of dropped lines.
    pub dropped: Option<u64>,
}

static LINES: Mutex<Vec<PluginLine>> = Mutex::new(Vec::new());

/// The lines and reports of the plugin `name` (any version) so far.
pub fn lines_of(name: &str) -> Vec<PluginLine> {
    let prefix = format!("{name}@");
    LINES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|l| l.plugin.starts_with(&prefix))
        .cloned()
        .collect()
}

/// The recording layer, filtered to the host's guest-log events at every level.
pub fn layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    Recorder.with_filter(Targets::new().with_target(TARGET, LevelFilter::TRACE))
}

struct Recorder;

impl<S: Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut line = PluginLine {
            at: Some(Instant::now()),
            ..PluginLine::default()
        };
        event.record(&mut line);
        if !line.plugin.is_empty() {
            LINES
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line);
        }
    }
}

impl Visit for PluginLine {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "plugin" => self.plugin = value.to_owned(),
            "stream" => self.stream = value.to_owned(),
            _ => self.record_debug(field, &value),
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "dropped" {
            self.dropped = Some(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            // `%plugin` arrives here, printed as its Display.
            "plugin" => self.plugin = format!("{value:?}"),
            "text" => self.printed = format!("{value:?}"),
            _ => {}
        }
    }
}
