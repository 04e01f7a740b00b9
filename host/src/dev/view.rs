//! What `weir dev` shows: served plugins, each parent with its ready state and children.
//!
//! Every half second the view lists the served kinds from the API server and
//! builds one line per plugin and per parent. On a terminal it redraws the
//! whole screen; otherwise it prints a line only when that line changed, so a
//! log file reads as a history of what happened.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Duration;

use kube::api::{Api, DynamicObject, ListParams};
use kube::{Client, ResourceExt};

use crate::hotload::Catalog;

/// Most parents the terminal view lists before summarising the rest.
const MAX_ROWS: usize = 30;

/// One look at the cluster: plugin lines and parent lines, keyed so changes can be found.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Snapshot {
    /// The file being compiled, if any.
    loading: Option<String>,
    /// Kind → plugin line.
    plugins: BTreeMap<String, String>,
    /// `Kind ns/name` → parent line.
    parents: BTreeMap<String, String>,
}

/// Runs forever (the caller aborts it): redraws on a terminal, prints changes otherwise.
pub(crate) async fn show(client: Client, catalog: Catalog, kubectl: String, live: bool) {
    let mut last = Snapshot::default();
    loop {
        let now = snapshot(&client, &catalog).await;
        let mut text = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = if live {
            draw(&mut text, &now, &kubectl)
        } else {
            print_changes(&mut text, &last, &now)
        };
        {
            let mut out = std::io::stdout().lock();
            // A closed stdout is not worth stopping the host for.
            let _ = out.write_all(&text).and_then(|()| out.flush());
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn snapshot(client: &Client, catalog: &Catalog) -> Snapshot {
    let mut snap = Snapshot {
        loading: catalog.loading().map(|f| f.display().to_string()),
        ..Snapshot::default()
    };
    for row in catalog.rows() {
        let short = row.sha256.get(..12).unwrap_or(&row.sha256);
        snap.plugins.insert(
            row.kind.clone(),
            format!(
                "plugin {} {} serves {} (sha256 {short}, from {})",
                row.name,
                row.version,
                row.kind,
                row.file.display()
            ),
        );
        let info = &row.info;
        let parents: Api<DynamicObject> =
            Api::all_with(client.clone(), &info.parent.api_resource());
        let Ok(parents) = parents.list(&ListParams::default()).await else {
            continue;
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
            snap.parents
                .insert(key.clone(), parent_line(&key, &parent, &owned));
        }
    }
    snap
}

fn parent_line(key: &str, parent: &DynamicObject, children: &BTreeSet<String>) -> String {
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
        Some((status, reason)) => format!(", Reconciled={status} ({reason})"),
        None => String::new(),
    };
    let list = children.iter().cloned().collect::<Vec<_>>().join(", ");
    format!(
        "{key}: {ready}{reconciled}, {} children [{list}]",
        children.len()
    )
}

fn draw(out: &mut impl Write, snap: &Snapshot, kubectl: &str) -> std::io::Result<()> {
    // Home and clear: a full redraw is simpler than diffing a screen and costs nothing at 2 Hz.
    write!(out, "\x1b[H\x1b[2J")?;
    writeln!(out, "weir dev — {kubectl} get blogs — Ctrl-C stops")?;
    writeln!(out)?;
    if let Some(file) = &snap.loading {
        writeln!(out, "  compiling {file} ...")?;
    }
    if snap.plugins.is_empty() {
        writeln!(
            out,
            "  no plugin loaded yet (build one into the plugins directory)"
        )?;
    }
    for line in snap.plugins.values() {
        writeln!(out, "  {line}")?;
    }
    writeln!(out)?;
    for line in snap.parents.values().take(MAX_ROWS) {
        writeln!(out, "  {line}")?;
    }
    if snap.parents.len() > MAX_ROWS {
        writeln!(out, "  ... and {} more", snap.parents.len() - MAX_ROWS)?;
    }
    Ok(())
}

fn print_changes(out: &mut impl Write, last: &Snapshot, now: &Snapshot) -> std::io::Result<()> {
    if now.loading != last.loading
        && let Some(file) = &now.loading
    {
        writeln!(out, "compiling {file} ...")?;
    }
    for (kind, line) in &now.plugins {
        if last.plugins.get(kind) != Some(line) {
            writeln!(out, "{line}")?;
        }
    }
    for kind in last
        .plugins
        .keys()
        .filter(|k| !now.plugins.contains_key(*k))
    {
        writeln!(
            out,
            "plugin for {kind} removed (its objects and children stay as they are)"
        )?;
    }
    for (key, line) in &now.parents {
        if last.parents.get(key) != Some(line) {
            writeln!(out, "{line}")?;
        }
    }
    for key in last
        .parents
        .keys()
        .filter(|k| !now.parents.contains_key(*k))
    {
        writeln!(out, "{key}: deleted")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(parents: &[(&str, &str)]) -> Snapshot {
        Snapshot {
            parents: parents
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn plain_output_prints_only_what_changed() {
        let a = snap(&[
            ("Blog d/a", "a: Ready=False"),
            ("Blog d/b", "b: Ready=True"),
        ]);
        let b = snap(&[("Blog d/a", "a: Ready=True"), ("Blog d/b", "b: Ready=True")]);
        let mut out = Vec::new();
        print_changes(&mut out, &a, &b).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "a: Ready=True\n");
        let mut out = Vec::new();
        print_changes(&mut out, &b, &snap(&[("Blog d/b", "b: Ready=True")])).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "Blog d/a: deleted\n");
    }

    #[test]
    fn the_terminal_view_shows_the_kubectl_line_compiling_plugins_and_caps_the_parents() {
        let now = Snapshot {
            loading: Some("plugins/blog.wasm".into()),
            plugins: BTreeMap::new(),
            parents: (0..MAX_ROWS + 5)
                .map(|i| (format!("Blog d/{i:03}"), format!("line {i:03}")))
                .collect(),
        };
        let mut out = Vec::new();
        draw(&mut out, &now, "kubectl --kubeconfig k").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("kubectl --kubeconfig k get blogs"));
        assert!(text.contains("compiling plugins/blog.wasm ..."));
        assert!(text.contains("no plugin loaded yet"));
        assert!(
            text.contains(&format!("line {:03}", MAX_ROWS - 1))
                && !text.contains(&format!("line {MAX_ROWS:03}"))
        );
        assert!(text.contains("... and 5 more"));
    }

    #[test]
    fn a_parent_line_shows_readiness_and_children() {
        let parent: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "weir.dev/v1alpha1", "kind": "Blog", "metadata": {"name": "b"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"},
                                      {"type": "Reconciled", "status": "True"}]}
        }))
        .unwrap();
        let children = BTreeSet::from(["ConfigMap/b-page".to_owned(), "Service/b".to_owned()]);
        assert_eq!(
            parent_line("Blog default/b", &parent, &children),
            "Blog default/b: Ready=True (Available), 2 children [ConfigMap/b-page, Service/b]"
        );
    }
}
