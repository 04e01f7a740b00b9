//! `weir-bench swap`: a hot swap on the shipped `weir run`, from a new Blog file renamed into its
//! plugin directory to the last child of N Blogs rewritten by the new version.
//!
//! Each swap alternates `blog-v2.wasm` (which labels every child `weir.dev/hot-swapped=v2`) and
//! `blog.wasm` (which drops that label again). Three times per swap, on this process's clock:
//! - **served**: the rename to the host's `/plugins` naming the new file's digest (polled every
//!   5 ms): the directory's settle time, the compile (from the compile cache after the first
//!   swap) and the swap itself;
//! - **first** and **last child**: the rename to the first and the last of the 3 × N children
//!   (page ConfigMap, Deployment, Service) in the new version's shape, as this process's watches
//!   see them.
//!
//! The figure is *last child − served*: how long the host takes, once the new version
//! serves, to bring every child to it.
//!
//! By default the emulator simulates no workloads: on a cluster, rolling out the 100 Deployments
//! whose pod template the swap changed is kube-controller-manager's work, in another process on
//! other cores; here the emulator's simulation runs in this process, on the same two cores as the
//! host, and was half of this process's CPU in the swaps (a profile of `--rollouts`). The
//! children exist either way (Blogs stay un-Ready without rollouts). `--rollouts` measures with
//! the simulation on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use weir::listing;
use weir_emulator::{Emulator, EmulatorConfig};

use super::cluster::{Target, blog_kind, emulator_for, install, is_ready};
use super::controllers::{Setup, spawn};
use super::{built, root, weir_binary};

/// The label `blog-v2.wasm` puts on every child.
const V2_LABEL: &str = "weir.dev/hot-swapped";

/// Arguments of `weir-bench swap`.
#[derive(Debug, clap::Args)]
pub struct SwapArgs {
    /// Blogs (each has three children).
    #[arg(long, default_value_t = 100)]
    blogs: usize,
    /// Swaps, alternating v2 and v1 (the median of the cached ones is printed too).
    #[arg(long, default_value_t = 5)]
    swaps: usize,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
    /// Simulate workloads in the emulator (Deployments roll out, Blogs turn Ready).
    #[arg(long)]
    rollouts: bool,
}

/// The children seen by the watches, and when the wanted shape was first and last reached.
#[derive(Default)]
struct Tracker {
    /// (kind, name) → whether the child carries the v2 label.
    children: HashMap<(String, String), bool>,
    /// How many of `children` carry it.
    labelled: usize,
    /// The shape being waited for: v2's label present or not.
    want: Option<bool>,
    first: Option<Instant>,
    done: Option<Instant>,
}

impl Tracker {
    fn see(&mut self, kind: &str, object: &DynamicObject, expected: usize) {
        let v2 = object.labels().get(V2_LABEL).is_some_and(|v| v == "v2");
        let before = self
            .children
            .insert((kind.to_owned(), object.name_any()), v2);
        if before != Some(v2) {
            if v2 {
                self.labelled += 1;
            } else if before == Some(true) {
                self.labelled -= 1;
            }
        }
        let Some(want) = self.want else { return };
        let now = Instant::now();
        if v2 == want && before != Some(want) && self.first.is_none() {
            self.first = Some(now);
        }
        if self.done.is_none() && self.in_shape(want) == expected {
            self.done = Some(now);
        }
    }

    /// Children in the shape `v2` (labelled or not).
    fn in_shape(&self, v2: bool) -> usize {
        if v2 {
            self.labelled
        } else {
            self.children.len() - self.labelled
        }
    }
}

fn lock(tracker: &Mutex<Tracker>) -> std::sync::MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The digest the host's `/plugins` lists for the Blog, if it lists one.
async fn served_digest(ops: &str) -> Result<Option<String>> {
    Ok(listing::fetch(ops)
        .await?
        .into_iter()
        .find(|r| r.kind == "Blog.weir.dev")
        .map(|r| r.sha256))
}

fn ms(from: Instant, to: Option<Instant>) -> String {
    to.map_or("-".into(), |t| {
        format!("{:.0}", t.duration_since(from).as_secs_f64() * 1000.0)
    })
}

/// Runs the swaps and prints one row each.
pub async fn run(args: SwapArgs) -> Result<()> {
    let binary = weir_binary(args.weir.clone())?;
    let v1 = built(
        root().join("target/plugins/blog.wasm"),
        "run plugins/build.sh",
    )?;
    let v2 = built(
        root().join("target/plugins/blog-v2.wasm"),
        "run plugins/build.sh",
    )?;
    let target = Target {
        kind: blog_kind(None),
        copy: None,
        namespace: "default".into(),
    };
    let emulator = if args.rollouts {
        emulator_for(std::slice::from_ref(&target), EmulatorConfig::default()).await?
    } else {
        let emulator = Emulator::start(EmulatorConfig::default()).await?;
        install(&emulator, std::slice::from_ref(&target)).await?;
        emulator
    };
    let client = emulator.client();
    let dir = tempfile::Builder::new()
        .prefix("weir-bench-swap-")
        .tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let setup = Setup::Weir {
        binary,
        plugins: vec![v1.clone()],
        cache: dir.path().join("cache"),
        replicas: 1,
        limits: weir::client::ClientLimits::default(),
    };
    let (mut children, ops) = spawn(&setup, dir.path(), &kubeconfig)?;
    let ops = ops.first().context("weir run's ops address")?.to_string();
    let plugin_dir = dir.path().join("plugins");

    // Watch the Blogs' children before any exists, so every version of each is seen.
    let expected = 3 * args.blogs;
    let tracker = Arc::new(Mutex::new(Tracker::default()));
    let mut watches = Vec::new();
    for kind in [
        weir_e2e::kinds::config_map(),
        weir_e2e::kinds::deployment(),
        weir_e2e::kinds::service(),
    ] {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &target.namespace, &kind.api_resource());
        let tracker = tracker.clone();
        watches.push(tokio::spawn(async move {
            let mut events = watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let object = match event {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
                    _ => continue,
                };
                // Only the Blogs' children (not the namespace's root CA ConfigMap).
                if object.owner_references().iter().any(|r| r.kind == "Blog") {
                    lock(&tracker).see(&kind.kind, &object, expected);
                }
            }
        }));
    }

    let blogs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &target.namespace,
        &target.kind.api_resource(),
    );
    for i in 0..args.blogs {
        let blog: DynamicObject = serde_json::from_value(json!({
            "apiVersion": target.kind.api_version(), "kind": "Blog",
            "metadata": {"name": format!("blog-{i}")},
            "spec": {"title": format!("Blog {i}"), "replicas": 1},
        }))?;
        blogs.create(&PostParams::default(), &blog).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let list = blogs.list(&Default::default()).await?;
        let ready = list.items.iter().filter(|o| is_ready(o)).count();
        let seen = lock(&tracker).children.len();
        if (ready == args.blogs || !args.rollouts) && seen == expected {
            break;
        }
        children.check_running()?;
        if Instant::now() > deadline {
            bail!(
                "after 300 s: {ready} of {} Blogs Ready, {seen} of {expected} children",
                args.blogs
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let the creation's last echoes (and rollouts, with --rollouts) settle before the first swap.
    tokio::time::sleep(Duration::from_secs(2)).await;

    println!(
        "hot swap on `weir run` ({} Blogs, {expected} children, the emulator {}), ms after the rename:\n",
        args.blogs,
        if args.rollouts {
            "rolling out Deployments"
        } else {
            "simulating no workloads"
        }
    );
    println!("| swap | to | served | first child | last child | last child − served |");
    println!("|---:|---|---:|---:|---:|---:|");
    let mut after_served = Vec::new();
    for n in 0..args.swaps {
        let to_v2 = n % 2 == 0;
        let file = if to_v2 { &v2 } else { &v1 };
        let before = served_digest(&ops).await?;
        let tmp = plugin_dir.join(".blog.wasm.tmp");
        std::fs::copy(file, &tmp).with_context(|| format!("copying {}", file.display()))?;
        {
            let mut t = lock(&tracker);
            t.want = Some(to_v2);
            t.first = None;
            t.done = None;
        }
        let renamed = Instant::now();
        std::fs::rename(&tmp, plugin_dir.join("blog.wasm"))?;
        let mut served = None;
        let deadline = renamed + Duration::from_secs(120);
        let (served, first, done) = loop {
            if served.is_none() && served_digest(&ops).await? != before {
                served = Some(Instant::now());
            }
            {
                let t = lock(&tracker);
                if let (Some(served), Some(done)) = (served, t.done) {
                    break (served, t.first, done);
                }
            }
            children.check_running()?;
            if Instant::now() > deadline {
                let t = lock(&tracker);
                bail!(
                    "swap {n}: {} of {expected} children (seen: {}) in the new version's shape \
                     after 120 s; the new version {}",
                    t.in_shape(to_v2),
                    t.children.len(),
                    if served.is_some() {
                        "serves"
                    } else {
                        "never served"
                    }
                );
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let settled = done.saturating_duration_since(served);
        if n >= 1 {
            after_served.push(settled);
        }
        println!(
            "| {} | {} | {} | {} | {} | {:.0} |",
            n + 1,
            if to_v2 { "v2" } else { "v1" },
            ms(renamed, Some(served)),
            ms(renamed, first),
            ms(renamed, Some(done)),
            settled.as_secs_f64() * 1000.0
        );
        // Let the emulator's rollouts of this swap finish before the next one.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    after_served.sort();
    if let Some(median) = after_served.get(after_served.len() / 2) {
        println!(
            "\nmedian of the swaps with a warm compile cache (2nd on): last child {:.0} ms after served",
            median.as_secs_f64() * 1000.0
        );
    }
    for w in watches {
        w.abort();
    }
    drop(children);
    emulator.shutdown().await;
    Ok(())
}
