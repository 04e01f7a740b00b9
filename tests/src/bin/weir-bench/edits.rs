//! `weir-bench edits`: what one parent edit costs, counted from the emulator's request log: N
//! Blogs created and left Ready, then edited at a steady rate, each edit changing one child.
//!
//! Each side (`weir run`, then the native twin) runs on a fresh emulator. Once every Blog is
//! Ready and the creation's last echoes have settled (a second), the request log is cleared and
//! `--per-sec` edits a second go to the Blogs in turn, each a new `spec.image` (which only the
//! Blog's Deployment carries; `--field title` changes the page ConfigMap and, through the pod
//! template's page hash, the Deployment too). The window closes a second after every edited
//! Blog is Ready for its new generation and its Deployment runs its last image. Every request the
//! controller sent in the window is counted (not the bench's edits and checks, nor Lease renewals)
//! and divided by the edits: reads; writes to children (server-side applies apart), to statuses
//! and to Events; and 409s, told apart as a conflict (a write's precondition failed) or
//! `AlreadyExists` (a create met an object of that name). Each side's requests are then listed by
//! method, resource, code and content type, to show which write met a 409.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;
use weir::client::ClientLimits;
use weir_emulator::{EmulatorConfig, RequestRecord};

use super::cluster::{
    BENCH_AGENT, Readiness, Target, bench_client, blog_kind, blog_name, create_blogs, emulator_for,
    is_ready,
};
use super::controllers::{Setup, start};
use super::table::by_request;
use super::{Side, built, root, weir_binary};

/// How long the edits may take to converge after the last is sent.
const DRAIN: Duration = Duration::from_secs(120);

/// Quiet time before the edits (the creation's last echoes) and after they converge (their own).
const SETTLE: Duration = Duration::from_secs(1);

/// Arguments of `weir-bench edits`.
#[derive(Debug, clap::Args)]
pub struct EditsArgs {
    /// Blogs created, left Ready, then edited in turn.
    #[arg(long, default_value_t = 1000)]
    blogs: usize,
    /// Edits per second.
    #[arg(long, default_value_t = 50.0)]
    per_sec: f64,
    /// Edits in all [default: one per Blog].
    #[arg(long)]
    edits: Option<usize>,
    /// The Blog field each edit changes.
    #[arg(long, value_enum, default_value = "image")]
    field: Field,
    /// Pods per Blog (`spec.replicas`).
    #[arg(long, default_value_t = 1)]
    replicas: i32,
    /// Measure only one side.
    #[arg(long, value_enum)]
    only: Option<Side>,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
    /// The Blog component `weir run` serves [default: target/plugins/blog.wasm]; an older `weir`
    /// needs the Blog built for the contract it implements.
    #[arg(long, value_name = "PATH")]
    plugin: Option<PathBuf>,
}

/// What an edit changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Field {
    /// `spec.image`: the Deployment alone.
    Image,
    /// `spec.title`: the page ConfigMap, and the Deployment through its page hash.
    Title,
}

impl Field {
    /// The Blog patch of edit `n`.
    fn patch(self, n: usize) -> serde_json::Value {
        match self {
            Field::Image => json!({"spec": {"image": image(n)}}),
            Field::Title => json!({"spec": {"title": format!("edit {n}")}}),
        }
    }
}

/// The image of edit `n`.
fn image(n: usize) -> String {
    format!("nginx:edit-{n}")
}

/// One side's counts over the window.
struct Counts {
    system: String,
    edits: usize,
    /// From the first edit sent to the last converged, and from the last sent to it.
    seconds: f64,
    drain: f64,
    /// The controller's requests in the window, watches and Leases left out.
    log: Vec<RequestRecord>,
    /// Watches the controller opened in the window (relists).
    watches: usize,
}

impl Counts {
    fn per_edit(&self, keep: impl Fn(&RequestRecord) -> bool) -> f64 {
        self.log.iter().filter(|r| keep(r)).count() as f64 / self.edits as f64
    }

    fn count(&self, keep: impl Fn(&RequestRecord) -> bool) -> usize {
        self.log.iter().filter(|r| keep(r)).count()
    }
}

/// Whether `r` is a server-side apply.
fn is_apply(r: &RequestRecord) -> bool {
    r.method == http::Method::PATCH
        && r.content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/apply-patch"))
}

/// Whether `r` is a 409 to a create (`AlreadyExists`), not to a precondition (`Conflict`).
fn already_exists(r: &RequestRecord) -> bool {
    r.status == 409 && r.method == http::Method::POST
}

/// Whether `r` is to an Event.
fn is_event(r: &RequestRecord) -> bool {
    r.path.contains("/events")
}

/// Whether `r` is to a status subresource.
fn is_status(r: &RequestRecord) -> bool {
    r.path.ends_with("/status")
}

/// Measures each side and prints the table, then each side's requests by kind.
pub async fn run(args: EditsArgs) -> Result<()> {
    if args.per_sec.is_nan() || args.per_sec <= 0.0 {
        bail!("--per-sec must be above 0");
    }
    let edits = args.edits.unwrap_or(args.blogs);
    let measures = |side| args.only.is_none_or(|only| only == side);
    let mut sides = Vec::new();
    if measures(Side::Weir) {
        let binary = weir_binary(args.weir.clone())?;
        let plugin = built(
            args.plugin
                .clone()
                .unwrap_or_else(|| root().join("target/plugins/blog.wasm")),
            "run `plugins/build.sh` first",
        )?;
        let cache = tempfile::Builder::new()
            .prefix("weir-bench-cache-")
            .tempdir()?;
        let setup = Setup::Weir {
            binary,
            plugins: vec![plugin],
            cache: cache.path().to_owned(),
            replicas: 1,
            limits: ClientLimits::default(),
        };
        sides.push(one("weir run", &setup, &args, edits).await?);
    }
    if measures(Side::Native) {
        let setup = Setup::Twins {
            namespaces: vec![None],
        };
        sides.push(one("native twin", &setup, &args, edits).await?);
    }
    println!(
        "\n{} Blogs ({} pods each), {edits} edits of spec.{} at {} a second; per edit:\n",
        args.blogs,
        args.replicas,
        match args.field {
            Field::Image => "image",
            Field::Title => "title",
        },
        args.per_sec
    );
    println!(
        "| controller | requests | GET | writes | child apply | child other | status | Event | 409 Conflict | 409 AlreadyExists | last converged, s after sent |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in &sides {
        let child = |r: &RequestRecord| r.is_write() && !is_status(r) && !is_event(r);
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {:.1} |",
            c.system,
            c.per_edit(|_| true),
            c.per_edit(|r| r.method == http::Method::GET),
            c.per_edit(RequestRecord::is_write),
            c.per_edit(|r| child(r) && is_apply(r)),
            c.per_edit(|r| child(r) && !is_apply(r)),
            c.per_edit(|r| r.is_write() && is_status(r)),
            c.per_edit(|r| r.is_write() && is_event(r)),
            c.count(|r| r.status == 409 && !already_exists(r)),
            c.count(already_exists),
            c.drain,
        );
    }
    for c in &sides {
        println!(
            "\n{}: {} requests in {:.1} s (watches opened: {}), by method, resource, code and content type:",
            c.system,
            c.log.len(),
            c.seconds,
            c.watches
        );
        for (what, n) in by_request(c.log.iter()) {
            println!("  {n:>6} × {what}");
        }
    }
    Ok(())
}

/// One side: its own emulator, the Blogs created and Ready, then the edits.
async fn one(label: &str, setup: &Setup, args: &EditsArgs, edits: usize) -> Result<Counts> {
    let target = Target {
        kind: blog_kind(None),
        copy: None,
        namespace: "default".into(),
    };
    let config = EmulatorConfig {
        // Every request from the creates to the end: about 20 per Blog and per edit.
        request_log: ((args.blogs + edits) * 20).max(EmulatorConfig::default().request_log),
        ..EmulatorConfig::default()
    };
    let targets = std::slice::from_ref(&target);
    let emulator = emulator_for(targets, config).await?;
    let dir = tempfile::Builder::new()
        .prefix("weir-bench-edits-")
        .tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let (mut children, _ops) =
        start(label, setup, targets, &emulator, dir.path(), &kubeconfig).await?;
    let bench = bench_client(&emulator)?;
    let blogs: Api<DynamicObject> = Api::namespaced_with(
        bench.clone(),
        &target.namespace,
        &target.kind.api_resource(),
    );
    let deployments: Api<Deployment> = Api::namespaced(bench, &target.namespace);
    let mut readiness = Readiness::watch(std::slice::from_ref(&blogs));
    let created = Instant::now();
    create_blogs(&blogs, &target.kind, args.blogs, args.replicas).await?;
    readiness
        .until(label, args.blogs, &mut children, created)
        .await?;
    drop(readiness);
    println!(
        "{label}: {} Blogs Ready in {:.1} s",
        args.blogs,
        created.elapsed().as_secs_f64()
    );
    tokio::time::sleep(SETTLE).await;
    emulator.clear_requests();

    // The edits, each its own task so that a slow answer does not hold the next one back.
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / args.per_sec));
    let started = Instant::now();
    let mut sent = Vec::with_capacity(edits);
    // Per Blog edited, its last edit.
    let mut last = BTreeMap::new();
    for n in 0..edits {
        tick.tick().await;
        let name = blog_name(&target.kind, n % args.blogs);
        last.insert(name.clone(), n);
        let (blogs, patch) = (blogs.clone(), args.field.patch(n));
        sent.push(tokio::spawn(async move {
            blogs
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("editing Blog {name}"))
        }));
    }
    for edit in sent {
        edit.await??;
    }
    let all_sent = Instant::now();
    let deadline = all_sent + DRAIN;
    loop {
        let left = unconverged(&blogs, &deployments, &last, args.field).await?;
        if left == 0 {
            break;
        }
        children.check_running()?;
        if Instant::now() > deadline {
            bail!(
                "{label}: {left} of {} edited Blogs never converged",
                last.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let converged = Instant::now();
    tokio::time::sleep(SETTLE).await;
    let (watches, log): (Vec<_>, Vec<_>) = emulator
        .requests()
        .into_iter()
        .filter(|r| r.user_agent.as_deref() != Some(BENCH_AGENT) && !r.path.contains("/leases"))
        .partition(RequestRecord::is_watch);
    drop(children);
    emulator.shutdown().await;
    Ok(Counts {
        system: label.to_owned(),
        edits,
        seconds: (converged - started).as_secs_f64(),
        drain: (converged - all_sent).as_secs_f64(),
        log,
        watches: watches.len(),
    })
}

/// How many of the Blogs in `last` are not yet Ready for their current generation or, when the
/// edits change the image, whose Deployment does not run their last edit's image yet.
async fn unconverged(
    blogs: &Api<DynamicObject>,
    deployments: &Api<Deployment>,
    last: &BTreeMap<String, usize>,
    field: Field,
) -> Result<usize> {
    let ready: std::collections::HashSet<String> = blogs
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter(|b| is_ready(b))
        .map(ResourceExt::name_any)
        .collect();
    let images: BTreeMap<String, String> = match field {
        Field::Image => deployments
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .filter_map(|d| {
                let image = d.spec?.template.spec?.containers.first()?.image.clone()?;
                Some((d.metadata.name?, image))
            })
            .collect(),
        Field::Title => BTreeMap::new(),
    };
    Ok(last
        .iter()
        .filter(|(name, n)| {
            !ready.contains(*name)
                || (field == Field::Image && images.get(*name) != Some(&image(**n)))
        })
        .count())
}
