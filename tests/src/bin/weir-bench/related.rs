//! `weir-bench related`: what a change of a related object costs, at 1,000 and 10,000 Blogs.
//!
//! Measured path: the host's related index ([`KindIndex`], `host/src/runtime/related.rs`)
//! exactly as the ConfigMap watch route uses it — every Blog's selection recorded with
//! [`KindIndex::set`] (its theme by name and its posts by a `matchLabels` selector, the
//! 0.2.0 Blog's `select`), then [`KindIndex::parents_of`] for each change, which is what the
//! route enqueues. Reported per row: parents enqueued (so reconciles triggered) per theme edit,
//! per post edit and per unrelated ConfigMap edit, the time of one lookup, and the heap the
//! index holds (the growth of this process's resident memory while building it, from
//! `/proc/self/statm`: each row builds a fresh index, largest last, so the figure is the
//! allocator's real footprint, page-rounded). Not
//! measured here: the reconcile itself (see the e2e `blog_theme` for that path on the emulator).

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use clap::Args;
use kube::api::{ApiResource, DynamicObject};
use weir::plugin::{LabelSelector, Selector};
use weir::runtime::ObjectKey;
use weir::runtime::cache::CachedObject;
use weir::runtime::related::{KindIndex, Pick};

/// Resident memory of this process in bytes (`/proc/self/statm`, Linux).
fn rss_bytes() -> Result<isize> {
    let statm = std::fs::read_to_string("/proc/self/statm").context("reading /proc/self/statm")?;
    let pages: isize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .context("statm without a resident size")?;
    Ok(pages * 4096)
}

/// Options of `weir-bench related`.
#[derive(Debug, Args)]
pub struct RelatedArgs {
    /// Blogs of one row (separate by commas).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    blogs: Vec<usize>,
    /// Changes measured per kind of change.
    #[arg(long, default_value_t = 1000)]
    changes: usize,
}

const NAMESPACE: &str = "bench";

fn config_map(name: &str, labels: &[(&str, &str)]) -> Result<CachedObject> {
    let ar = ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    };
    let mut cm = DynamicObject::new(name, &ar).within(NAMESPACE);
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    CachedObject::from_object(&cm).context("encoding a ConfigMap in the cache's form")
}

/// The selection the Blog `b-<i>` makes: its theme `t-<i>` and the posts labelled `blog=b-<i>`.
fn picks(i: usize) -> [Pick; 2] {
    let namespace = Some(NAMESPACE.to_owned());
    [
        Pick {
            cluster: None,
            namespace: namespace.clone(),
            selector: Selector::Name(format!("t-{i}")),
        },
        Pick {
            cluster: None,
            namespace,
            selector: Selector::Labels(LabelSelector {
                match_labels: BTreeMap::from([("blog".to_owned(), format!("b-{i}"))]),
                match_expressions: vec![],
            }),
        },
    ]
}

/// One row: parents per change (theme, post, unrelated), ns per lookup, index bytes.
struct Row {
    blogs: usize,
    per_theme: f64,
    per_post: f64,
    per_unrelated: f64,
    lookup_ns: f64,
    bytes: isize,
}

fn row(blogs: usize, changes: usize) -> Result<Row> {
    let keys: Vec<ObjectKey> = (0..blogs)
        .map(|i| ObjectKey::new(NAMESPACE, format!("b-{i}")))
        .collect();
    let before = rss_bytes()?;
    let index = KindIndex::default();
    for (i, key) in keys.iter().enumerate() {
        index.set(key, picks(i));
    }
    let bytes = rss_bytes()? - before;
    ensure!(index.parents() == blogs, "every Blog is indexed");

    let step = (blogs / changes.max(1)).max(1);
    let targets: Vec<usize> = (0..blogs).step_by(step).take(changes).collect();
    let themes: Vec<_> = targets
        .iter()
        .map(|i| config_map(&format!("t-{i}"), &[]))
        .collect::<Result<_>>()?;
    let posts: Vec<_> = targets
        .iter()
        .map(|i| config_map(&format!("p-{i}"), &[("blog", &format!("b-{i}"))]))
        .collect::<Result<_>>()?;
    let noise: Vec<_> = targets
        .iter()
        .map(|i| config_map(&format!("noise-{i}"), &[("app", "other")]))
        .collect::<Result<_>>()?;
    let started = Instant::now();
    let count = |objects: &[CachedObject]| -> usize {
        objects
            .iter()
            .map(|o| index.parents_of(Some(o), o).len())
            .sum()
    };
    let (theme, post, unrelated) = (count(&themes), count(&posts), count(&noise));
    let lookups = themes.len() + posts.len() + noise.len();
    let lookup_ns = started.elapsed().as_nanos() as f64 / lookups as f64;
    let per = |n: usize| n as f64 / targets.len() as f64;
    Ok(Row {
        blogs,
        per_theme: per(theme),
        per_post: per(post),
        per_unrelated: per(unrelated),
        lookup_ns,
        bytes,
    })
}

/// Prints one line per row.
pub fn run(args: RelatedArgs) -> Result<()> {
    println!(
        "related index (KindIndex::set / parents_of, the ConfigMap watch route's path); parents enqueued per change"
    );
    println!(
        "{:>8} {:>12} {:>12} {:>14} {:>12} {:>12} {:>12}",
        "blogs", "theme edit", "post edit", "unrelated edit", "ns/lookup", "index KiB", "B/Blog"
    );
    for &blogs in &args.blogs {
        let r = row(blogs, args.changes)?;
        println!(
            "{:>8} {:>12.2} {:>12.2} {:>14.2} {:>12.0} {:>12.1} {:>12.0}",
            r.blogs,
            r.per_theme,
            r.per_post,
            r.per_unrelated,
            r.lookup_ns,
            r.bytes as f64 / 1024.0,
            r.bytes as f64 / r.blogs as f64
        );
    }
    Ok(())
}
