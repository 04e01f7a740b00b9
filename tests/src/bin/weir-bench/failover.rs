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

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::WORKERS;
use super::cluster::is_ready;
use super::fleet::{Fleet, NAMESPACE, Replica, SETTLE};

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

/// Runs the kills and prints one row each, then the median.
pub async fn run(args: FailoverArgs) -> Result<()> {
    if args.replicas < 2 {
        bail!("a failover needs at least two replicas");
    }
    let fleet = Fleet::new(args.weir, WORKERS, true).await?;
    let blogs = fleet.blogs();
    let leases: Api<Lease> = Api::namespaced(fleet.client(), NAMESPACE);
    let mut replicas: Vec<Replica> = (0..args.replicas)
        .map(|n| fleet.start(&format!("r{n}")))
        .collect::<Result<_>>()?;
    let mut next = args.replicas;
    fleet.create_blogs(args.blogs).await?;

    println!(
        "{} Blogs, {} `weir run --shard` replicas ({}), Leases of weir run's default duration",
        args.blogs,
        args.replicas,
        fleet.binary().display()
    );
    println!("\n| kill | replica | led | its Blogs | served again s |\n|---:|---|---|---:|---:|");
    let mut times = Vec::new();
    for kill in 0..args.kills {
        let owners = fleet.settled(&mut replicas).await?;
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
        replicas.push(fleet.start(&format!("r{next}"))?);
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
