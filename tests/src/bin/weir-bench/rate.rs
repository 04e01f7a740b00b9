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
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;

use super::WORKERS;
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

/// Edits sent and not yet seen on their child, per Blog: each edit's number and when its
/// request left, oldest first.
type Outstanding = Arc<Mutex<HashMap<usize, Vec<(u64, Instant)>>>>;

/// What one count of replicas measured.
struct Measured {
    edits: u64,
    /// The latency of each edit served.
    latencies: Vec<Duration>,
    /// Edits served by a page that showed a later edit of the same Blog.
    skipped: usize,
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
        let Measured {
            edits,
            mut latencies,
            skipped,
        } = one(&args, n).await?;
        latencies.sort();
        let at = |p: f64| {
            let i = ((p * latencies.len() as f64).ceil() as usize).saturating_sub(1);
            latencies
                .get(i)
                .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
        };
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

/// One run with `n` replicas.
async fn one(args: &RateArgs, n: usize) -> Result<Measured> {
    let fleet = Fleet::new(args.weir.clone(), args.workers).await?;
    let sharded = n > 1;
    let mut replicas: Vec<Replica> = (0..n)
        .map(|i| fleet.start(&format!("r{i}"), sharded))
        .collect::<Result<_>>()?;
    fleet.create_blogs(args.blogs).await?;
    fleet.settled(&mut replicas, sharded).await?;

    let outstanding: Outstanding = Arc::default();
    let served = Arc::new(Mutex::new((Vec::new(), 0)));
    let blogs_n = args.blogs;
    let (listed, is_listed) = tokio::sync::oneshot::channel();
    let pages: Api<ConfigMap> = Api::namespaced(fleet.client(), NAMESPACE);
    let watch = tokio::spawn({
        let (outstanding, served) = (outstanding.clone(), served.clone());
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
                        let Some(edit) = edit_on(&page) else { continue };
                        let now = Instant::now();
                        let mut outstanding =
                            outstanding.lock().unwrap_or_else(PoisonError::into_inner);
                        let Some(of_blog) = outstanding.get_mut(&(edit as usize % blogs_n)) else {
                            continue;
                        };
                        let upto = of_blog.partition_point(|(e, _)| *e <= edit);
                        let mut served = served.lock().unwrap_or_else(PoisonError::into_inner);
                        for (e, sent) in of_blog.drain(..upto) {
                            served.0.push(now - sent);
                            if e != edit {
                                served.1 += 1;
                            }
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

    let blogs = fleet.blogs();
    let edits = (args.per_sec * args.secs as f64) as u64;
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / args.per_sec));
    let mut requests = Vec::new();
    for edit in 0..edits {
        tick.tick().await;
        let blog = edit as usize % args.blogs;
        let name = format!("blog-{blog}");
        outstanding
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(blog)
            .or_default()
            .push((edit, Instant::now()));
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
        let left: usize = outstanding
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(Vec::len)
            .sum();
        if left == 0 {
            break;
        }
        if Instant::now() > deadline {
            bail!("{left} of {edits} edits never reached their page with {n} replicas");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    watch.abort();
    drop(replicas);
    let (latencies, skipped) =
        std::mem::take(&mut *served.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(Measured {
        edits,
        latencies,
        skipped,
    })
}

/// The edit whose title a page shows (`<title>edit N</title>`), if any.
fn edit_on(page: &ConfigMap) -> Option<u64> {
    let html = page.data.as_ref()?.values().next()?;
    let rest = html.split_once("<title>edit ")?.1;
    rest.split_once("</title>")?.0.parse().ok()
}
