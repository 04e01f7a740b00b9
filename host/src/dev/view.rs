//! What `weir dev` shows: served plugins with their rates, each parent's state, and a feed of what the host did.
//!
//! The view keeps one [`Model`] (`model.rs`): every half second it lists the served kinds' parents and
//! children from the API server and reads the host's counters ([`Metrics`]); in between it takes
//! the host's [`Activity`] (writes, drift put back, failures, refusals, swaps) and `weir dev`'s
//! own notes (examples applied, `--watch` builds and fixtures). On a terminal the model is drawn
//! as a screen (`screen.rs`); otherwise each cluster, plugin and parent line is printed when it changed,
//! and each feed line as it comes, so a log file reads as a history.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kube::Client;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::model::{Model, cluster_line, parent_line, plugin_line};
use super::screen::Screen;
use crate::hotload::Catalog;
use crate::manager::Activity;
use crate::metrics::Metrics;

/// How often the cluster is listed and the counters read.
const REFRESH: Duration = Duration::from_millis(500);
/// How often the screen is redrawn (when something changed).
const FRAME: Duration = Duration::from_millis(100);

/// What the view reads.
pub(crate) struct Inputs {
    /// The emulator's client.
    pub client: Client,
    /// The plugins served.
    pub catalog: Catalog,
    /// The host's counters.
    pub metrics: Arc<Metrics>,
    /// The host's activity.
    pub activity: broadcast::Receiver<Activity>,
    /// `weir dev`'s own lines (examples applied, builds, fixtures).
    pub notes: mpsc::UnboundedReceiver<String>,
    /// The `kubectl --kubeconfig ...` prefix to show.
    pub kubectl: String,
    /// The member clusters engaged (`--clusters N`), and the line naming the host's own.
    pub clusters: Option<(crate::clusters::Engaged, String)>,
}

/// Runs until `stop`: draws a screen on a terminal (`live`), prints changes otherwise.
pub(crate) async fn show(mut inputs: Inputs, live: bool, stop: CancellationToken) {
    let mut screen = if live {
        match Screen::enter() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("weir dev: no terminal view ({e}); printing lines");
                None
            }
        }
    } else {
        None
    };
    let mut model = Model::default();
    let mut printed = Printed::default();
    let mut refresh = tokio::time::interval(REFRESH);
    let mut frame = tokio::time::interval(FRAME);
    let mut dirty = true;
    let mut out = std::io::stdout();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = refresh.tick() => {
                model.refresh(&inputs.client, &inputs.catalog, &inputs.metrics).await;
                if let Some((engaged, own)) = &inputs.clusters {
                    model.clusters = std::iter::once((crate::plugin::LOCAL_CLUSTER.to_owned(), own.clone()))
                        .chain(engaged.rows().iter().map(|c| (c.name.clone(), cluster_line(c))))
                        .collect();
                }
                dirty = true;
            }
            got = inputs.activity.recv() => match got {
                Ok(activity) => {
                    model.take(&activity, SystemTime::now());
                    dirty = true;
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    model.note(&format!("({n} activities not shown: the view fell behind)"), SystemTime::now());
                }
                Err(broadcast::error::RecvError::Closed) => {}
            },
            Some(note) = inputs.notes.recv() => {
                model.note(&note, SystemTime::now());
                dirty = true;
            }
            _ = frame.tick(), if dirty => {
                dirty = false;
                // A closed stdout is not worth stopping the host for.
                let _ = match &mut screen {
                    Some(screen) => screen.draw(&model, &inputs.kubectl),
                    None => printed.print(&mut out, &model),
                };
            }
        }
    }
    let _ = printed.print(&mut out, &model);
    drop(screen);
}

/// What plain mode printed last, so it prints only what changed.
#[derive(Debug, Default)]
pub(crate) struct Printed {
    loading: Option<String>,
    clusters: BTreeMap<String, String>,
    plugins: BTreeMap<String, String>,
    parents: BTreeMap<String, String>,
    /// Feed lines printed, counted as [`Model::added`] counts them.
    feed: usize,
}

impl Printed {
    /// Prints the feed lines not printed yet, then the plugin and parent lines that changed.
    pub(crate) fn print(&mut self, out: &mut impl Write, model: &Model) -> std::io::Result<()> {
        let mut text = Vec::new();
        let new = model.added.saturating_sub(self.feed).min(model.feed.len());
        for line in model.feed.iter().skip(model.feed.len() - new) {
            // Plain lines carry no clock: a log file has its own.
            let line = line.split_once(' ').map_or(line.as_str(), |(_, l)| l);
            writeln!(text, "{line}")?;
        }
        self.feed = model.added;
        if model.loading != self.loading
            && let Some(file) = &model.loading
        {
            writeln!(text, "compiling {file} ...")?;
        }
        self.loading = model.loading.clone();
        for (name, line) in &model.clusters {
            if self.clusters.get(name) != Some(line) {
                writeln!(text, "{line}")?;
            }
        }
        for name in self
            .clusters
            .keys()
            .filter(|n| !model.clusters.contains_key(*n))
        {
            writeln!(text, "cluster {name} released")?;
        }
        self.clusters.clone_from(&model.clusters);
        let plugins: BTreeMap<String, String> = model
            .plugins
            .iter()
            .map(|(k, p)| (k.clone(), plugin_line(p)))
            .collect();
        for (kind, line) in &plugins {
            if self.plugins.get(kind) != Some(line) {
                writeln!(text, "{line}")?;
            }
        }
        for kind in self.plugins.keys().filter(|k| !plugins.contains_key(*k)) {
            writeln!(
                text,
                "plugin for {kind} removed (its objects and children stay as they are)"
            )?;
        }
        self.plugins = plugins;
        let parents: BTreeMap<String, String> = model
            .parents
            .iter()
            .map(|(k, p)| (k.clone(), parent_line(k, p)))
            .collect();
        for (key, line) in &parents {
            if self.parents.get(key) != Some(line) {
                writeln!(text, "{line}")?;
            }
        }
        for key in self.parents.keys().filter(|k| !parents.contains_key(*k)) {
            writeln!(text, "{key}: deleted")?;
        }
        self.parents = parents;
        out.write_all(&text)?;
        out.flush()
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
