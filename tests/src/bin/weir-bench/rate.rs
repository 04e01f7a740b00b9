//! `weir-bench rate`: Blogs edited at a steady rate (edits per second, as the sharding
//! evaluations measure capacity) while one `weir run`, then three `--shard` replicas, serve them;
//! the figure is each edit's latency from the request that changes the Blog's title to its page
//! ConfigMap (the child) carrying the new title, seen by a watch of this process: p50, p90, p99
//! and the slowest.
//!
//! Each count of replicas runs on a fresh emulator: the Blogs are created and left to settle, a
//! watch of the ConfigMaps starts, then `--per-sec` edits a second for `--secs` seconds go to the
//! Blogs in turn (so one Blog is edited again after `blogs / per-sec` seconds). The host is level-
//! triggered: when a Blog's edits come faster than it is served, its page may skip to a later
//! edit, which serves the earlier ones too (each counted from its own request; the table says
//! how many were served so).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;

use super::WORKERS;
use super::cluster::{blog_kind, blog_name};
use super::fleet::{Fleet, NAMESPACE, Replica};

/// How long the edits still outstanding when the last is sent may take to reach their child.
const DRAIN: Duration = Duration::from_secs(60);

/// Arguments of `weir-bench rate`.
#[derive(Debug, clap::Args)]
pub struct RateArgs {
    /// Blogs served (and edited in turn).
    #[arg(long, default_value_t = 1000)]
    blogs: usize,
    /// Replicas of each run: 1 is a plain `weir run`, more are `--shard` replicas.
    #[arg(long, value_delimiter = ',', default_value = "1,3")]
    replicas: Vec<usize>,
    /// Edits per second.
    #[arg(long, default_value_t = 20.0)]
    per_sec: f64,
    /// Seconds of edits.
    #[arg(long, default_value_t = 30)]
    secs: u64,
    /// Each replica's `--workers`.
    #[arg(long, default_value_t = WORKERS)]
    workers: usize,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
}

/// The edits of one run: those sent and not yet seen on their child, and those served.
#[derive(Default)]
pub(super) struct Ledger {
    /// Per Blog: each edit's number and when its request left, oldest first.
    outstanding: HashMap<usize, Vec<(u64, Instant)>>,
    /// The latency of each edit served.
    pub(super) latencies: Vec<Duration>,
    /// Edits served by a page that showed a later edit of the same Blog.
    pub(super) skipped: usize,
}

impl Ledger {
    /// Edit `edit` of Blog `blog` leaves now.
    fn sent(&mut self, blog: usize, edit: u64) {
        let sent = (edit, Instant::now());
        self.outstanding.entry(blog).or_default().push(sent);
    }

    /// Blog `blog`'s page shows edit `edit`: that edit and the Blog's earlier ones are served.
    fn seen(&mut self, blog: usize, edit: u64) {
        let now = Instant::now();
        let Some(of_blog) = self.outstanding.get_mut(&blog) else {
            return;
        };
        let upto = of_blog.partition_point(|(e, _)| *e <= edit);
        for (e, sent) in of_blog.drain(..upto) {
            self.latencies.push(now - sent);
            if e != edit {
                self.skipped += 1;
            }
        }
    }

    /// Edits not served yet.
    fn left(&self) -> usize {
        self.outstanding.values().map(Vec::len).sum()
    }
}

/// Locks `ledger` (a panic while it was held leaves it as it was).
fn lock(ledger: &Mutex<Ledger>) -> std::sync::MutexGuard<'_, Ledger> {
    ledger.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs each count of replicas and prints a row for it.
pub async fn run(args: RateArgs) -> Result<()> {
    if args.per_sec.is_nan() || args.per_sec <= 0.0 {
        bail!("--per-sec must be above 0");
    }
    println!(
        "{} Blogs, {} edits a second for {} s, {} workers per replica; from an edit's request to its child changed",
        args.blogs, args.per_sec, args.secs, args.workers
    );
    println!(
        "\n| replicas | edits | served | of them by a later edit | p50 ms | p90 ms | p99 ms | slowest ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for &n in &args.replicas {
        let (
            edits,
            Ledger {
                mut latencies,
                skipped,
                ..
            },
        ) = one(&args, n).await?;
        latencies.sort();
        let at = |p: f64| percentile_ms(&latencies, p);
        println!(
            "| {n} | {edits} | {} | {skipped} | {:.0} | {:.0} | {:.0} | {:.0} |",
            latencies.len(),
            at(0.50),
            at(0.90),
            at(0.99),
            at(1.0)
        );
    }
    Ok(())
}

/// One run with `n` replicas: the edits sent, and what became of them.
async fn one(args: &RateArgs, n: usize) -> Result<(u64, Ledger)> {
    let fleet = Fleet::new(args.weir.clone(), args.workers, n > 1).await?;
    let mut replicas: Vec<Replica> = (0..n)
        .map(|i| fleet.start(&format!("r{i}")))
        .collect::<Result<_>>()?;
    fleet.create_blogs(args.blogs).await?;
    fleet.settled(&mut replicas).await?;

    let names: Vec<String> = (0..args.blogs)
        .map(|i| blog_name(&blog_kind(None), i))
        .collect();
    let pages: Api<ConfigMap> = Api::namespaced(fleet.client(), NAMESPACE);
    let edited = edit((&fleet.blogs(), &pages), &names, (args.per_sec, args.secs))
        .await
        .with_context(|| format!("with {n} replicas"))?;
    drop(replicas);
    Ok(edited)
}

/// Edits sent so far by this process: a later call of [`edit`] numbers its edits on from there,
/// so no edit sets the title an earlier phase's last edit of that Blog left (that would change
/// nothing, and never reach the page).
static EDITS_SENT: AtomicU64 = AtomicU64::new(0);

/// Edits the Blogs `names` of `blogs` in turn, `per_sec` a second for `secs` seconds, each a
/// new title, while a watch of `pages` (their page ConfigMaps) sees each edit reach its page:
/// the edits sent, and what became of them.
pub(super) async fn edit(
    (blogs, pages): (&Api<DynamicObject>, &Api<ConfigMap>),
    names: &[String],
    (per_sec, secs): (f64, u64),
) -> Result<(u64, Ledger)> {
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let blogs_n = names.len();
    if blogs_n == 0 {
        bail!("no Blogs to edit");
    }
    let (listed, is_listed) = tokio::sync::oneshot::channel();
    let pages = pages.clone();
    let watch = tokio::spawn({
        let ledger = ledger.clone();
        async move {
            let mut listed = Some(listed);
            let mut events = watcher(pages, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::InitDone) => {
                        if let Some(listed) = listed.take() {
                            let _ = listed.send(());
                        }
                    }
                    Ok(watcher::Event::Apply(page)) => {
                        if let Some(edit) = edit_on(&page) {
                            lock(&ledger).seen(edit as usize % blogs_n, edit);
                        }
                    }
                    _ => {}
                }
            }
        }
    });
    is_listed
        .await
        .context("the watch of the pages ended before it listed")?;

    let edits = (per_sec * secs as f64) as u64;
    let first = EDITS_SENT.fetch_add(edits, Ordering::Relaxed);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / per_sec));
    let mut requests = Vec::new();
    for edit in first..first + edits {
        tick.tick().await;
        let blog = edit as usize % blogs_n;
        let name = names[blog].clone();
        lock(&ledger).sent(blog, edit);
        let blogs = blogs.clone();
        requests.push(tokio::spawn(async move {
            let patch = json!({"spec": {"title": format!("edit {edit}")}});
            blogs
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("editing Blog {name}"))
        }));
    }
    for request in requests {
        request.await??;
    }
    let deadline = Instant::now() + DRAIN;
    loop {
        let left = lock(&ledger).left();
        if left == 0 {
            break;
        }
        if Instant::now() > deadline {
            watch.abort();
            bail!("{left} of {edits} edits never reached their page");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    watch.abort();
    let ledger = std::mem::take(&mut *lock(&ledger));
    Ok((edits, ledger))
}

/// The `p` quantile of the sorted `latencies`, in milliseconds (NaN when there are none).
pub(super) fn percentile_ms(latencies: &[Duration], p: f64) -> f64 {
    let i = ((p * latencies.len() as f64).ceil() as usize).saturating_sub(1);
    latencies
        .get(i)
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// The edit whose title a page shows (`<title>edit N</title>`), if any.
fn edit_on(page: &ConfigMap) -> Option<u64> {
    let html = page.data.as_ref()?.values().next()?;
    let rest = html.split_once("<title>edit ")?.1;
    rest.split_once("</title>")?.0.parse().ok()
}
