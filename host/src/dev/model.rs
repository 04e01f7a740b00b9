//! The model `weir dev` shows: served plugins with their rates, each parent's state, and a feed of what the host did.
//!
//! [`Model`] takes the host's activity and `weir dev`'s notes as feed lines and, on each refresh,
//! lists the served kinds' parents and children and reads the host's counters. The view
//! (`view.rs`) keeps one and hands it to the screen (`screen.rs`) or prints what changed.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Instant, SystemTime};

use kube::api::{Api, DynamicObject, ListParams};
use kube::{Client, ResourceExt};

use crate::hotload::Catalog;
use crate::manager::Activity;
use crate::metrics::Metrics;
use crate::reconcile::error::ResultLabel;

/// Feed lines kept (the screen shows the newest that fit).
const FEED: usize = 500;

/// One served plugin, as the view shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PluginRow {
    pub name: String,
    pub version: String,
    pub kind: String,
    /// The first 12 hex digits of the component's sha256.
    pub sha: String,
    pub file: String,
    /// Reconciles per second over the last refresh.
    pub rate: f64,
    pub errors: u64,
    pub refused: u64,
    pub hot_loops: u64,
}

/// One parent, as the view shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ParentRow {
    /// `Ready=True (Available)`.
    pub ready: String,
    /// The `Reconciled` condition when it is not `True`, e.g. `Reconciled=False (Refused)`.
    pub reconciled: String,
    /// `Kind/name` of each child it controls.
    pub children: BTreeSet<String>,
}

/// Everything on the screen.
#[derive(Debug, Default)]
pub(crate) struct Model {
    /// The file being compiled, if any.
    pub loading: Option<String>,
    /// Parent kind → plugin.
    pub plugins: BTreeMap<String, PluginRow>,
    /// Cluster name → its line: the host's own and the member clusters engaged
    /// (`weir dev --clusters N`); empty without members.
    pub clusters: BTreeMap<String, String>,
    /// `Kind ns/name` → parent.
    pub parents: BTreeMap<String, ParentRow>,
    /// `Kind ns/name` → when it was last reconciled (`HH:MM:SS`) and how that ended.
    pub last: HashMap<String, (String, String)>,
    /// `HH:MM:SS what happened`, oldest first.
    pub feed: VecDeque<String>,
    /// Feed lines ever added (the feed itself drops the oldest).
    pub added: usize,
    /// Per plugin name: when its reconciles were last counted, and the count.
    counted: HashMap<String, (Instant, u64)>,
}

impl Model {
    /// Takes one activity: the last reconcile of its parent, and a feed line unless it is a
    /// plain reconcile.
    pub(crate) fn take(&mut self, activity: &Activity, at: SystemTime) {
        let time = clock(at);
        match activity {
            Activity::Reconciled {
                parent, outcome, ..
            } => {
                let outcome = match (outcome, self.last.get(parent)) {
                    // Keep the failure's reason, which came just before.
                    (ResultLabel::Error | ResultLabel::Refused, Some((_, o)))
                        if o.contains('(') =>
                    {
                        o.clone()
                    }
                    (o, _) => o.as_str().to_owned(),
                };
                self.last.insert(parent.clone(), (time, outcome));
            }
            other => {
                if let Activity::Failed {
                    parent,
                    outcome,
                    reason,
                    ..
                } = other
                {
                    let text = format!("{} ({reason})", outcome.as_str());
                    self.last.insert(parent.clone(), (time.clone(), text));
                }
                self.note_at(&other.to_string(), &time);
            }
        }
    }

    /// Adds a feed line.
    pub(crate) fn note(&mut self, text: &str, at: SystemTime) {
        self.note_at(text, &clock(at));
    }

    fn note_at(&mut self, text: &str, time: &str) {
        if self.feed.len() == FEED {
            self.feed.pop_front();
        }
        self.feed.push_back(format!("{time} {text}"));
        self.added += 1;
    }

    /// Reads the catalog and the counters, and lists parents and children from the API server.
    pub(crate) async fn refresh(&mut self, client: &Client, catalog: &Catalog, metrics: &Metrics) {
        self.loading = catalog.loading().map(|f| f.display().to_string());
        let now = Instant::now();
        let mut plugins = BTreeMap::new();
        let mut parents = BTreeMap::new();
        for row in catalog.rows() {
            let count = |r: ResultLabel| metrics.reconciles_of(&row.name, r.as_str());
            let total: u64 = ResultLabel::ALL.into_iter().map(count).sum();
            let rate = match self.counted.insert(row.name.clone(), (now, total)) {
                Some((then, before)) if now > then => {
                    total.saturating_sub(before) as f64 / (now - then).as_secs_f64()
                }
                _ => 0.0,
            };
            plugins.insert(
                row.kind.clone(),
                PluginRow {
                    name: row.name.clone(),
                    version: row.version.clone(),
                    kind: row.kind.clone(),
                    sha: row.sha256.get(..12).unwrap_or(&row.sha256).to_owned(),
                    file: row.file.display().to_string(),
                    rate,
                    errors: count(ResultLabel::Error),
                    refused: count(ResultLabel::Refused),
                    hot_loops: metrics.hot_loops_of(&row.name),
                },
            );
            list_parents(client, &row.info, &mut parents).await;
        }
        self.plugins = plugins;
        self.parents = parents;
    }
}

/// Lists the parents of one plugin's kind with the children each controls.
async fn list_parents(
    client: &Client,
    info: &crate::plugin::PluginInfo,
    out: &mut BTreeMap<String, ParentRow>,
) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &info.parent.api_resource());
    let Ok(parents) = api.list(&ListParams::default()).await else {
        return;
    };
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for kind in &info.children {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &kind.api_resource());
        let Ok(list) = api.list(&ListParams::default()).await else {
            continue;
        };
        for child in list {
            if let Some(owner) = child
                .owner_references()
                .iter()
                .find(|o| o.controller == Some(true))
            {
                children
                    .entry(owner.uid.clone())
                    .or_default()
                    .insert(format!("{}/{}", kind.kind, child.name_any()));
            }
        }
    }
    for parent in parents {
        let key = format!(
            "{} {}/{}",
            info.parent.kind,
            parent.namespace().unwrap_or_default(),
            parent.name_any()
        );
        let owned = parent
            .uid()
            .and_then(|uid| children.remove(&uid))
            .unwrap_or_default();
        out.insert(key, parent_row(&parent, owned));
    }
}

fn parent_row(parent: &DynamicObject, children: BTreeSet<String>) -> ParentRow {
    let condition = |type_: &str| {
        parent.data["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
            .map(|c| {
                (
                    c["status"].as_str().unwrap_or("?").to_owned(),
                    c["reason"].as_str().unwrap_or("").to_owned(),
                )
            })
    };
    let ready = match condition("Ready") {
        Some((status, reason)) if reason.is_empty() => format!("Ready={status}"),
        Some((status, reason)) => format!("Ready={status} ({reason})"),
        None => "Ready=?".to_owned(),
    };
    let reconciled = match condition("Reconciled") {
        Some((status, _)) if status == "True" => String::new(),
        Some((status, reason)) => format!("Reconciled={status} ({reason})"),
        None => String::new(),
    };
    ParentRow {
        ready,
        reconciled,
        children,
    }
}

/// The plain line of an engaged member cluster.
pub(crate) fn cluster_line(c: &crate::clusters::ClusterRow) -> String {
    format!(
        "cluster {} engaged at {}: {} kinds watched, {} objects cached",
        c.name, c.server, c.kinds, c.objects
    )
}

/// The plain line of a plugin (no rates: it is printed when it changes).
pub(crate) fn plugin_line(p: &PluginRow) -> String {
    format!(
        "plugin {} {} serves {} (sha256 {}, from {})",
        p.name, p.version, p.kind, p.sha, p.file
    )
}

/// The plain line of a parent.
pub(crate) fn parent_line(key: &str, p: &ParentRow) -> String {
    let reconciled = if p.reconciled.is_empty() {
        String::new()
    } else {
        format!(", {}", p.reconciled)
    };
    let list = p.children.iter().cloned().collect::<Vec<_>>().join(", ");
    format!(
        "{key}: {}{reconciled}, {} children [{list}]",
        p.ready,
        p.children.len()
    )
}

/// `HH:MM:SS` (UTC) of `at`.
fn clock(at: SystemTime) -> String {
    let secs = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let day = secs % 86_400;
    format!("{:02}:{:02}:{:02}", day / 3600, day % 3600 / 60, day % 60)
}
