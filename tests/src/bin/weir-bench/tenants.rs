//! `weir-bench tenants`: one tenant's edit latency, quiet and while another tenant floods.
//!
//! One `weir run --plugins-from-cluster` under a policy giving two namespaces to two teams.
//! Team A serves the Blog as its own `TenantPlugin` over `--blogs` Blogs; its Blogs are edited
//! at a steady rate (as `rate` does: from the request that changes a Blog's title to its page
//! ConfigMap carrying it) for `--secs` seconds, quiet. Then team B serves the hostile plugin
//! as its own, `--flood-parents` parents of each attack that floods a host's shares
//! (`requeue-now`, `requeue-zero`: requeues at once; `churn`: children rewritten on every pass,
//! so API requests; `log-flood`; `--attacks` picks some of them, to flood with one alone),
//! and once the flood is under way team A's Blogs are edited the same way again. With `--rounds N`
//! the two phases alternate N times (the flood's parents deleted, and its calls stopped, before
//! each quiet phase), so that whatever else the machine does in those minutes falls on both
//! sides alike. The figure is team A's p99 under the flood over its quiet p99, each over every
//! round's edits pooled (the goal: at most 1.2), with each tenant's share from `/metrics` (its
//! requests, and the cores its plugin calls held on average) over the flood's phases.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;
use weir_e2e::tenants::{apply, component, install_plugin_crd, install_tenant_plugin_crd};
use weir_e2e::weir_run::{WeirRun, ops_get, sample};
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

use super::controllers::cpu_seconds;
use super::hostile::apply_crd;
use super::rate::{Ledger, edit, percentile_ms};
use super::{blog_kind, is_ready, request_mix, weir_binary};

/// Team A: serves the Blog, edited and measured.
const TEAM_A: &str = "team-a";
/// Team B: serves the hostile plugin, flooding.
const TEAM_B: &str = "team-b";
/// The attacks team B's plugin runs.
const FLOOD: [&str; 4] = ["requeue-now", "requeue-zero", "churn", "log-flood"];
/// Edits of each Blog before the first phase: its Deployment's ReplicaSet history full (the
/// new ReplicaSet and `revisionHistoryLimit`'s default of 10 old ones).
const WARM_UP_EDITS: u64 = 10;
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
    /// Seconds the flood runs before team A's phase beside it.
    #[arg(long, default_value_t = 5)]
    settle_secs: u64,
    /// Edits of each of team A's Blogs before the first quiet phase, sent at `--per-sec` and
    /// not measured (edits still on their way after a minute are left to finish in the quiet
    /// phase, and said so): each edit rolls its Blog's Deployment out, and a Deployment keeps 10
    /// old ReplicaSets (`revisionHistoryLimit`'s default), all of which the emulator's
    /// Deployment controller reads on every pass; so every phase is measured with the history
    /// full, as on a cluster that has served the Blogs for a while, rather than the flood's
    /// phase with a longer history than the quiet one before it.
    #[arg(long, default_value_t = WARM_UP_EDITS)]
    warm_up_edits: u64,
    /// Quiet and flooding phases, alternated this many times.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// The attacks team B floods with, `--flood-parents` parents each [default: all of
    /// requeue-now, requeue-zero, churn, log-flood].
    #[arg(long, value_delimiter = ',', value_name = "ATTACK,...")]
    attacks: Vec<String>,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
}

/// Runs both phases and prints the table.
pub async fn run(args: TenantsArgs) -> Result<()> {
    if args.per_sec.is_nan() || args.per_sec <= 0.0 {
        bail!("--per-sec must be above 0");
    }
    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    let attacks_run = flood_attacks(&args.attacks)?;
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
    if args.warm_up_edits > 0 {
        let edits = args.warm_up_edits * args.blogs as u64;
        let secs = (edits as f64 / args.per_sec).ceil() as u64;
        println!("warming up: {edits} edits of team A's Blogs over {secs} s, not measured");
        if let Err(e) = edit((&blogs, &pages), &names, (args.per_sec, secs)).await {
            println!("warm-up: {e:#}");
        }
    }
    println!(
        "team A: {} Blogs, {} edits a second for {} s; from an edit's request to its page changed",
        args.blogs, args.per_sec, args.secs
    );
    let attack_kind = weir_e2e::hostile::attack_kind();
    let attacks: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), TEAM_B, &attack_kind.api_resource());
    let (mut quiet, mut flooded) = (Phases::default(), Phases::default());
    let mut flood_metrics = Vec::new();
    let host_pid = host.pid().context("weir run is not running")?;
    // CPU seconds of this process (the emulator, its controllers and the bench's client) and
    // of `weir run`, now.
    let cpu_now = || (cpu_seconds(std::process::id()), cpu_seconds(host_pid));
    let mut flood_requests = Vec::new();
    for round in 1..=args.rounds {
        let (cpu, at) = (cpu_now(), Instant::now());
        quiet.add(edit((&blogs, &pages), &names, (args.per_sec, args.secs)).await?);
        quiet.cpu(cpu, cpu_now(), at.elapsed());
        host.check_running()?;
        if round == 1 {
            // Team B's plugin arrives after the first quiet phase; later quiet phases have it
            // loaded, with no parents.
            apply(
                &client,
                TEAM_B,
                "hostile",
                ("hostile-component", "hostile.wasm"),
                json!({}),
            )
            .await?;
        }
        flood(&attacks, (&attacks_run, args.flood_parents), ops, &mut host).await?;
        tokio::time::sleep(Duration::from_secs(args.settle_secs)).await;
        println!("round {round}: team B flooding, team A's edits begin");
        let before = ops_get(ops, "/metrics").await?;
        let (mut cursor, cpu, at) = (emulator.request_cursor(), cpu_now(), Instant::now());
        flooded.add(edit((&blogs, &pages), &names, (args.per_sec, args.secs)).await?);
        flooded.cpu(cpu, cpu_now(), at.elapsed());
        flood_requests.extend(emulator.requests_since(&mut cursor));
        let after = ops_get(ops, "/metrics").await?;
        host.check_running()?;
        flood_metrics.push((before, after));
        if round < args.rounds {
            calm(&attacks, ops, &mut host).await?;
        }
    }

    println!(
        "\n| team A's phase | edits | served | of them by a later edit | p50 ms | p90 ms | p99 ms | slowest ms |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    if args.rounds > 1 {
        for (round, (q, f)) in quiet.rounds.iter().zip(&flooded.rounds).enumerate() {
            row(&format!("round {}: quiet", round + 1), q);
            row(&format!("round {}: team B flooding", round + 1), f);
        }
    }
    let pooled = if args.rounds > 1 {
        " (every round)"
    } else {
        ""
    };
    let quiet_p99 = row(&format!("quiet{pooled}"), &quiet.all);
    let flood_p99 = row(&format!("team B flooding{pooled}"), &flooded.all);
    println!(
        "\nteam A's p99 under team B's flood / quiet: {:.2}x (goal <= 1.2x)",
        flood_p99 / quiet_p99
    );
    let seconds = (args.secs * args.rounds as u64) as f64;
    for (phase, p) in [("quiet", &quiet), ("team B flooding", &flooded)] {
        let wall = p.wall.as_secs_f64();
        println!(
            "{phase}: this process (the emulator, its controllers, the bench's client) on {:.2} cores, weir run on {:.2}, over team A's {wall:.0} s",
            p.cpu_seconds.0 / wall,
            p.cpu_seconds.1 / wall
        );
    }
    println!(
        "\nthe emulator's requests a second while team A was measured beside the flood (the 12 most):\n\n| verb | resource | namespace | a second |\n|---|---|---|---:|"
    );
    let wall = flooded.wall.as_secs_f64();
    for ((verb, resource, ns), n) in request_mix::count(&flood_requests).into_iter().take(12) {
        println!("| {verb} | {resource} | {ns} | {:.1} |", n as f64 / wall);
    }
    let (_, last) = flood_metrics
        .last()
        .context("no flooding phase was measured")?;
    // What the flooding phases added to a counter.
    let during = |series: &str| -> f64 {
        flood_metrics
            .iter()
            .map(|(before, after)| {
                sample(after, series).unwrap_or_default()
                    - sample(before, series).unwrap_or_default()
            })
            .sum()
    };
    let calls: f64 = flood_metrics
        .iter()
        .map(|(before, after)| hostile_calls(after) - hostile_calls(before))
        .sum();
    println!(
        "team B: {} parents ({}); {:.0} hostile calls in all, {:.1} a second while team A was measured beside the flood (the host throttles a parent whose answer never settles)",
        attacks_run.len() * args.flood_parents,
        attacks_run.join(", "),
        hostile_calls(last),
        calls / seconds
    );
    for ns in [TEAM_A, TEAM_B] {
        let series = |name: &str| format!("{name}{{tenant=\"{ns}\"}}");
        println!(
            "{ns}: {:.0} API requests a second beside the flood, its plugin calls on {:.2} cores on average, {} reconcile slots, {} cached objects",
            during(&series("weir_tenant_api_requests_total")) / seconds,
            during(&series("weir_tenant_plugin_call_seconds_total")) / seconds,
            sample(last, &series("weir_tenant_reconcile_slots")).unwrap_or(f64::NAN),
            sample(last, &series("weir_tenant_cached_objects")).unwrap_or(f64::NAN),
        );
    }
    let _ = attacks
        .delete_collection(&Default::default(), &ListParams::default())
        .await;
    host.kill()?;
    Ok(())
}

/// One condition's edits: each round's, and every round's pooled; and the CPU seconds this
/// process and `weir run` used over them, and how long they took.
#[derive(Default)]
struct Phases {
    rounds: Vec<(u64, Ledger)>,
    all: (u64, Ledger),
    cpu_seconds: (f64, f64),
    wall: Duration,
}

impl Phases {
    fn add(&mut self, (edits, ledger): (u64, Ledger)) {
        self.all.0 += edits;
        self.all.1.latencies.extend_from_slice(&ledger.latencies);
        self.all.1.skipped += ledger.skipped;
        self.rounds.push((edits, ledger));
    }

    /// Adds the CPU seconds between `before` and `after` (this process's, `weir run`'s), over
    /// `wall`.
    fn cpu(&mut self, before: (f64, f64), after: (f64, f64), wall: Duration) {
        self.cpu_seconds.0 += after.0 - before.0;
        self.cpu_seconds.1 += after.1 - before.1;
        self.wall += wall;
    }
}

/// Prints one phase's row; its p99 in milliseconds.
fn row(phase: &str, (edits, ledger): &(u64, Ledger)) -> f64 {
    let mut latencies = ledger.latencies.clone();
    latencies.sort();
    let at = |p: f64| percentile_ms(&latencies, p);
    println!(
        "| {phase} | {edits} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} |",
        latencies.len(),
        ledger.skipped,
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0)
    );
    at(0.99)
}

/// The attacks `--attacks` names (every one of [`FLOOD`] when it names none), each once, in
/// [`FLOOD`]'s order; an attack not in [`FLOOD`] is refused.
fn flood_attacks(named: &[String]) -> Result<Vec<&'static str>> {
    if let Some(unknown) = named.iter().find(|a| !FLOOD.contains(&a.as_str())) {
        bail!(
            "--attacks: {unknown:?} is not one of the flooding attacks ({})",
            FLOOD.join(", ")
        );
    }
    Ok(FLOOD
        .into_iter()
        .filter(|a| named.is_empty() || named.iter().any(|n| n == a))
        .collect())
}

/// Starts team B's flood: `parents` parents of each of `run`, then waits until its plugin has
/// made 20 calls.
async fn flood(
    attacks: &Api<DynamicObject>,
    (run, parents): (&[&str], usize),
    ops: std::net::SocketAddr,
    host: &mut WeirRun,
) -> Result<()> {
    let attack_kind = weir_e2e::hostile::attack_kind();
    let calls_before = hostile_calls(&ops_get(ops, "/metrics").await?);
    for &attack in run {
        for i in 0..parents {
            let parent: DynamicObject = serde_json::from_value(json!({
                "apiVersion": attack_kind.api_version(), "kind": attack_kind.kind,
                "metadata": {"name": format!("{attack}-{i}")},
                "spec": {"attack": attack, "target": ""},
            }))?;
            attacks
                .create(&PostParams::default(), &parent)
                .await
                .with_context(|| format!("creating team B's parent {attack}-{i}"))?;
        }
    }
    let started = tokio::time::Instant::now();
    loop {
        let metrics = ops_get(ops, "/metrics").await?;
        if hostile_calls(&metrics) - calls_before >= 20.0 {
            return Ok(());
        }
        host.check_running()?;
        if started.elapsed() > BUDGET {
            bail!("team B's flood never got under way: {}", host.log_tail(20));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Stops team B's flood: its parents deleted and gone, and its plugin called no more for a
/// second.
async fn calm(
    attacks: &Api<DynamicObject>,
    ops: std::net::SocketAddr,
    host: &mut WeirRun,
) -> Result<()> {
    attacks
        .delete_collection(&Default::default(), &ListParams::default())
        .await
        .context("deleting team B's parents")?;
    let started = tokio::time::Instant::now();
    let mut calls = f64::NAN;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let left = attacks.list(&ListParams::default()).await?.items.len();
        let now = hostile_calls(&ops_get(ops, "/metrics").await?);
        if left == 0 && now == calls {
            return Ok(());
        }
        calls = now;
        host.check_running()?;
        if started.elapsed() > BUDGET {
            bail!(
                "team B's flood did not stop: {left} parents left: {}",
                host.log_tail(20)
            );
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_attack_named_floods_with_all_and_named_ones_flood_alone_in_order() {
        assert_eq!(flood_attacks(&[]).unwrap(), FLOOD.to_vec());
        let named = ["log-flood".to_string(), "churn".to_string()];
        assert_eq!(flood_attacks(&named).unwrap(), ["churn", "log-flood"]);
        let unknown = ["spin".to_string()];
        let refused = flood_attacks(&unknown).unwrap_err().to_string();
        assert!(refused.contains("\"spin\""), "{refused}");
    }
}
