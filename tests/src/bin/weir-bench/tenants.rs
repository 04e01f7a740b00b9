//! `weir-bench tenants`: one tenant's edit latency, quiet and while another tenant floods.
//!
//! One `weir run --plugins-from-cluster` under a policy giving two namespaces to two teams.
//! Team A serves the Blog as its own `TenantPlugin` over `--blogs` Blogs; its Blogs are edited
//! at a steady rate (as `rate` does: from the request that changes a Blog's title to its page
//! ConfigMap carrying it) for `--secs` seconds, quiet. Then team B serves the hostile plugin
//! as its own, `--flood-parents` parents of each attack that floods a host's shares
//! (`requeue-now`, `requeue-zero`: requeues at once; `churn`: children rewritten on every pass,
//! so API requests; `log-flood`),
//! and once the flood is under way team A's Blogs are edited the same way again. The figure is
//! team A's p99 under the flood over its quiet p99 (the goal: at most 1.2), with each tenant's
//! share from `/metrics` (its requests, and the cores its plugin calls held on average).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;
use weir_e2e::tenants::{apply, component, install_plugin_crd, install_tenant_plugin_crd};
use weir_e2e::weir_run::{WeirRun, ops_get, sample};
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

use super::hostile::apply_crd;
use super::rate::{Ledger, edit, percentile_ms};
use super::{blog_kind, is_ready, weir_binary};

/// Team A: serves the Blog, edited and measured.
const TEAM_A: &str = "team-a";
/// Team B: serves the hostile plugin, flooding.
const TEAM_B: &str = "team-b";
/// The attacks team B's plugin runs.
const FLOOD: [&str; 4] = ["requeue-now", "requeue-zero", "churn", "log-flood"];
/// How long a component may take to load, or the Blogs to turn Ready.
const BUDGET: Duration = Duration::from_secs(120);

/// Arguments of `weir-bench tenants`.
#[derive(Debug, clap::Args)]
pub struct TenantsArgs {
    /// Team A's Blogs (edited in turn).
    #[arg(long, default_value_t = 100)]
    blogs: usize,
    /// Edits per second to team A's Blogs.
    #[arg(long, default_value_t = 20.0)]
    per_sec: f64,
    /// Seconds of edits in each phase.
    #[arg(long, default_value_t = 30)]
    secs: u64,
    /// Team B's parents per attack.
    #[arg(long, default_value_t = 25)]
    flood_parents: usize,
    /// Seconds the flood runs before team A's second phase.
    #[arg(long, default_value_t = 5)]
    settle_secs: u64,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
}

/// Runs both phases and prints the table.
pub async fn run(args: TenantsArgs) -> Result<()> {
    if args.per_sec.is_nan() || args.per_sec <= 0.0 {
        bail!("--per-sec must be above 0");
    }
    let binary = weir_binary(args.weir.clone())?;
    let emulator = Emulator::start(EmulatorConfig {
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(100),
        }),
        ..EmulatorConfig::default()
    })
    .await?;
    let client = emulator.client();
    for ns in [TEAM_A, TEAM_B] {
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .with_context(|| format!("creating namespace {ns}"))?;
    }
    apply_crd(&client, "blog").await?;
    apply_crd(&client, "hostile").await?;
    install_plugin_crd(&client).await?;
    install_tenant_plugin_crd(&client).await?;
    component(&client, TEAM_A, "blog-component", "blog.wasm").await?;
    component(&client, TEAM_B, "hostile-component", "hostile.wasm").await?;

    let dir = tempfile::Builder::new().prefix("weir-bench-").tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "tenants:\n  {TEAM_A}:\n    kinds: [{{group: weir.dev, kind: Blog}}]\n  {TEAM_B}:\n    kinds: [{{group: test.weir.dev, kind: Attack}}]\n"
        ),
    )?;
    let ops = free_address()?;
    let policy_arg = policy.to_string_lossy().into_owned();
    let mut host = WeirRun::start_from_cluster(
        &binary,
        dir.path(),
        &kubeconfig,
        (None, 300),
        &ops.to_string(),
        &["--policy", &policy_arg],
    )?;

    apply(
        &client,
        TEAM_A,
        "blog",
        ("blog-component", "blog.wasm"),
        json!({}),
    )
    .await?;
    let kind = blog_kind(None);
    let blogs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), TEAM_A, &kind.api_resource());
    let names: Vec<String> = (0..args.blogs).map(|i| format!("blog-{i:05}")).collect();
    for name in &names {
        let blog: DynamicObject = serde_json::from_value(json!({
            "apiVersion": kind.api_version(), "kind": kind.kind,
            "metadata": {"name": name},
            "spec": {"title": name, "replicas": 1},
        }))?;
        blogs.create(&PostParams::default(), &blog).await?;
    }
    all_ready(&blogs, args.blogs, &mut host).await?;
    let pages: Api<ConfigMap> = Api::namespaced(client.clone(), TEAM_A);
    println!(
        "team A: {} Blogs, {} edits a second for {} s; from an edit's request to its page changed",
        args.blogs, args.per_sec, args.secs
    );
    let quiet = edit((&blogs, &pages), &names, (args.per_sec, args.secs)).await?;
    host.check_running()?;

    apply(
        &client,
        TEAM_B,
        "hostile",
        ("hostile-component", "hostile.wasm"),
        json!({}),
    )
    .await?;
    let attack_kind = weir_e2e::hostile::attack_kind();
    let attacks: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), TEAM_B, &attack_kind.api_resource());
    for attack in FLOOD {
        for i in 0..args.flood_parents {
            let parent: DynamicObject = serde_json::from_value(json!({
                "apiVersion": attack_kind.api_version(), "kind": attack_kind.kind,
                "metadata": {"name": format!("{attack}-{i}")},
                "spec": {"attack": attack, "target": ""},
            }))?;
            attacks.create(&PostParams::default(), &parent).await?;
        }
    }
    let started = tokio::time::Instant::now();
    loop {
        let metrics = ops_get(ops, "/metrics").await?;
        if hostile_calls(&metrics) >= 20.0 {
            break;
        }
        host.check_running()?;
        if started.elapsed() > BUDGET {
            bail!("team B's flood never got under way: {}", host.log_tail(20));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(args.settle_secs)).await;
    let before = ops_get(ops, "/metrics").await?;
    let flooded = edit((&blogs, &pages), &names, (args.per_sec, args.secs)).await?;
    let after = ops_get(ops, "/metrics").await?;
    host.check_running()?;

    println!(
        "\n| team A's phase | edits | served | of them by a later edit | p50 ms | p90 ms | p99 ms | slowest ms |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    let quiet_p99 = row("quiet", quiet);
    let flood_p99 = row("team B flooding", flooded);
    println!(
        "\nteam A's p99 under team B's flood / quiet: {:.2}x (goal <= 1.2x)",
        flood_p99 / quiet_p99
    );
    let calls = hostile_calls(&after) - hostile_calls(&before);
    let seconds = args.secs as f64;
    println!(
        "team B: {} parents; {:.0} hostile calls in all, {:.1} a second during team A's second phase (the host throttles a parent whose answer never settles)",
        FLOOD.len() * args.flood_parents,
        hostile_calls(&after),
        calls / seconds
    );
    for ns in [TEAM_A, TEAM_B] {
        let series = |name: &str| sample(&after, &format!("{name}{{tenant=\"{ns}\"}}"));
        // What the phase added to a counter of the tenant's.
        let during = |name: &str| {
            series(name).unwrap_or_default()
                - sample(&before, &format!("{name}{{tenant=\"{ns}\"}}")).unwrap_or_default()
        };
        println!(
            "{ns}: {:.0} API requests a second during the phase, its plugin calls on {:.2} cores on average, {} reconcile slots, {} cached objects",
            during("weir_tenant_api_requests_total") / seconds,
            during("weir_tenant_plugin_call_seconds_total") / seconds,
            series("weir_tenant_reconcile_slots").unwrap_or(f64::NAN),
            series("weir_tenant_cached_objects").unwrap_or(f64::NAN),
        );
    }
    let _ = attacks
        .delete_collection(&Default::default(), &ListParams::default())
        .await;
    host.kill()?;
    Ok(())
}

/// Prints one phase's row; its p99 in milliseconds.
fn row(phase: &str, (edits, ledger): (u64, Ledger)) -> f64 {
    let Ledger {
        mut latencies,
        skipped,
        ..
    } = ledger;
    latencies.sort();
    let at = |p: f64| percentile_ms(&latencies, p);
    println!(
        "| {phase} | {edits} | {} | {skipped} | {:.0} | {:.0} | {:.0} | {:.0} |",
        latencies.len(),
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0)
    );
    at(0.99)
}

/// The hostile plugin's calls so far, whatever their result, from `/metrics`.
fn hostile_calls(metrics: &str) -> f64 {
    ["success", "error", "refused", "gone"]
        .iter()
        .filter_map(|r| {
            sample(
                metrics,
                &format!("weir_reconciles_total{{plugin=\"hostile\",result=\"{r}\"}}"),
            )
        })
        .sum()
}

/// Waits until `count` Blogs of `blogs` are Ready.
async fn all_ready(blogs: &Api<DynamicObject>, count: usize, host: &mut WeirRun) -> Result<()> {
    let started = tokio::time::Instant::now();
    loop {
        let listed = blogs.list(&ListParams::default()).await?;
        let ready = listed.items.iter().filter(|b| is_ready(b)).count();
        if ready == count {
            return Ok(());
        }
        host.check_running()?;
        if started.elapsed() > BUDGET {
            let first = listed.items.first().map(ResourceExt::name_any);
            bail!(
                "{ready} of {count} Blogs Ready after {BUDGET:?} (first: {first:?}): {}",
                host.log_tail(20)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A loopback address no one listens on now, for `weir run`'s `/metrics`.
fn free_address() -> Result<std::net::SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}
