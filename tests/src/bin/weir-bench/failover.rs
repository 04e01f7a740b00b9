//! `weir-bench failover`: sharded `weir run` replicas serving N Blogs; one is killed (SIGKILL:
//! nothing in it finishes, its Leases are left to run out) and every Blog it owned is edited at
//! once; the figure is the time from the kill until each of those Blogs is reconciled again (its
//! status `Ready` for the edited generation), by the replicas that take them over. Then a
//! replacement joins under a new name, the Blogs settle, and the next kill takes another replica,
//! in turn, the coordinator (the leader) too; the median is printed with each kill and whether
//! the killed replica led.
//!
//! The replicas run with `weir run`'s defaults for both Leases (15 s), so a failover is bounded
//! by the shard Lease running out plus the reassignment and the reconciles.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use weir::shard::OWNER_LABEL;
use weir_e2e::host::RunArgs;
use weir_emulator::EmulatorConfig;

use super::cluster::{Target, blog_kind, emulator_for, is_ready};
use super::{WORKERS, built, root, weir_binary};

/// The namespace of the Blogs and of the Leases.
const NAMESPACE: &str = "bench";

/// How long the Blogs may take to settle after a start or a join.
const SETTLE: Duration = Duration::from_secs(300);

/// Arguments of `weir-bench failover`.
#[derive(Debug, clap::Args)]
pub struct FailoverArgs {
    /// Blogs spread across the replicas.
    #[arg(long, default_value_t = 300)]
    blogs: usize,
    /// Replicas running at once.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Kills, one replica each, in turn (the median is over them).
    #[arg(long, default_value_t = 5)]
    kills: usize,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
}

/// One running replica.
struct Replica {
    identity: String,
    child: Child,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the kills and prints one row each, then the median.
pub async fn run(args: FailoverArgs) -> Result<()> {
    if args.replicas < 2 {
        bail!("a failover needs at least two replicas");
    }
    let binary = weir_binary(args.weir)?;
    let blog = built(
        root().join("target/plugins/blog.wasm"),
        "run `plugins/build.sh` first",
    )?;
    let target = Target {
        kind: blog_kind(None),
        copy: None,
        namespace: NAMESPACE.into(),
    };
    let emulator = emulator_for(std::slice::from_ref(&target), EmulatorConfig::default()).await?;
    let client = emulator.client();
    let dir = tempfile::Builder::new()
        .prefix("weir-bench-failover-")
        .tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins)?;
    std::fs::copy(&blog, plugins.join("blog.wasm"))
        .with_context(|| format!("copying {}", blog.display()))?;
    let cache = dir.path().join("cache");
    let start = |n: usize| -> Result<Replica> {
        let identity = format!("r{n}");
        let args = RunArgs {
            cache_dir: cache.clone(),
            workers: Some(WORKERS),
            ..RunArgs::plugins(&plugins, &kubeconfig).namespace(NAMESPACE)
        }
        .flags(["--shard", "--identity", &identity])
        .flags(["--lease-namespace", NAMESPACE]);
        let child = args
            .command(&binary)?
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(Replica { identity, child })
    };

    let blogs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &target.kind.api_resource());
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let mut replicas: Vec<Replica> = (0..args.replicas).map(&start).collect::<Result<_>>()?;
    let mut next = args.replicas;
    futures::stream::iter(0..args.blogs)
        .map(|i| {
            let blogs = blogs.clone();
            async move {
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
                    "metadata": {"name": format!("blog-{i}")},
                    "spec": {"title": format!("Blog {i}"), "replicas": 1},
                }))?;
                blogs.create(&PostParams::default(), &obj).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(64)
        .try_collect::<Vec<()>>()
        .await?;

    println!(
        "{} Blogs, {} `weir run --shard` replicas ({}), Leases of weir run's default duration",
        args.blogs,
        args.replicas,
        binary.display()
    );
    println!("\n| kill | replica | led | its Blogs | served again s |\n|---:|---|---|---:|---:|");
    let mut times = Vec::new();
    for kill in 0..args.kills {
        let owners = settled(&blogs, &mut replicas).await?;
        let leader = leases
            .get_opt("weir-leader")
            .await?
            .and_then(|l| l.spec?.holder_identity);
        let victim = kill % replicas.len();
        let mut killed = replicas.remove(victim);
        let of_victim: Vec<String> = owners.get(&killed.identity).cloned().unwrap_or_default();
        killed.child.kill().context("killing a replica")?;
        let at = Instant::now();
        killed.child.wait()?;
        let edit = PatchParams::default();
        for name in &of_victim {
            let patch = json!({"spec": {"title": format!("moved {kill}")}});
            blogs.patch(name, &edit, &Patch::Merge(&patch)).await?;
        }
        let deadline = at + SETTLE;
        loop {
            let list = blogs.list(&Default::default()).await?;
            let waiting = list
                .items
                .iter()
                .filter(|b| of_victim.contains(&b.name_any()) && !is_ready(b))
                .count();
            if waiting == 0 {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "{waiting} of {}'s Blogs never served again",
                    killed.identity
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let took = at.elapsed();
        times.push(took);
        let led = leader.as_deref() == Some(killed.identity.as_str());
        println!(
            "| {} | {} | {} | {} | {:.2} |",
            kill + 1,
            killed.identity,
            if led { "yes" } else { "no" },
            of_victim.len(),
            took.as_secs_f64()
        );
        drop(killed);
        replicas.push(start(next)?);
        next += 1;
    }
    times.sort();
    if let Some(median) = times.get(times.len() / 2) {
        println!(
            "\nmedian of {}: served again {:.2} s after the kill",
            times.len(),
            median.as_secs_f64()
        );
    }
    Ok(())
}

/// Waits until every Blog is Ready and owned by a running replica, each replica owning some;
/// the Blogs of each owner.
async fn settled(
    blogs: &Api<DynamicObject>,
    replicas: &mut [Replica],
) -> Result<BTreeMap<String, Vec<String>>> {
    let deadline = Instant::now() + SETTLE;
    loop {
        for r in replicas.iter_mut() {
            if let Some(status) = r.child.try_wait()? {
                bail!("replica {} exited by itself: {status}", r.identity);
            }
        }
        let list = blogs.list(&Default::default()).await?;
        let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut ready = true;
        for b in &list.items {
            ready &= is_ready(b);
            if let Some(owner) = b.labels().get(OWNER_LABEL) {
                owners.entry(owner.clone()).or_default().push(b.name_any());
            }
        }
        let all_owned = owners.values().map(Vec::len).sum::<usize>() == list.items.len();
        let running = replicas.iter().all(|r| owners.contains_key(&r.identity))
            && owners.len() == replicas.len();
        if ready && all_owned && running {
            return Ok(owners);
        }
        if Instant::now() > deadline {
            let counts: BTreeMap<&String, usize> =
                owners.iter().map(|(m, b)| (m, b.len())).collect();
            bail!("the Blogs did not settle on the running replicas: owners {counts:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
