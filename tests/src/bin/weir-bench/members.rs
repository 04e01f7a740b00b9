//! `weir-bench members`: one `weir run --clusters DIR` engaging N member clusters, each given a
//! few children by Spreads in the hub; the host's memory per engaged idle cluster, the time to
//! engage them all, and a rotation of every member's credentials.
//!
//! The hub and the members are emulators in this process; each member is secure (HTTPS, bearer
//! tokens, RBAC), as a real member's API server is, and the host reaches it as a ServiceAccount
//! of its own. `weir run` is the shipped binary, a process of its own, so its memory is its own:
//! - **memory per cluster**: the host's resident size idle with the members engaged and their
//!   children placed, less its size idle before any member, over N (its `/metrics` says what its
//!   member caches hold);
//! - **engage**: from every kubeconfig written into the host's directory to every member having
//!   served the host its first list of Deployments;
//! - **rotation**: every file rewritten with a token of another ServiceAccount, then the old
//!   accounts deleted (their tokens die with them) and every member's watches dropped. Counted
//!   from the members' request logs: the host's lists after the rewrite (the goal is none), its
//!   requests refused for their credentials, and its watches opened again under the new token.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::json;
use weir_e2e::fleet::{Members, account_token, write_token};
use weir_e2e::host::RunArgs;
use weir_e2e::kinds;
use weir_e2e::weir_run::{ops_get, sample};
use weir_emulator::{Emulator, EmulatorConfig, RequestCursor, RequestRecord};

use super::controllers::Children;
use super::memory::sum;
use super::weir_binary;

/// Arguments of `weir-bench members`.
#[derive(Debug, clap::Args)]
pub struct MembersArgs {
    /// Member clusters engaged.
    #[arg(long, default_value_t = 100)]
    clusters: usize,
    /// Deployments placed in every member, each by a Spread in the hub (one Spread places in
    /// at most 200 members, so each of these is a Spread per 200 members).
    #[arg(long, default_value_t = 3)]
    parents: usize,
    /// The `weir` binary measured [default: target/release/weir].
    #[arg(long, value_name = "PATH")]
    weir: Option<PathBuf>,
}

/// The namespace of the Spreads in the hub and of their children in the members.
const NAMESPACE: &str = "bench";

/// How long each step may take.
const STEP: Duration = Duration::from_secs(300);

/// Members one Spread places a child in (an answer holds at most 256 children).
const SPREAD_CLUSTERS: usize = 200;

/// How long the host is left alone before its size is read.
const IDLE: Duration = Duration::from_secs(5);

/// Whether `r` is the host's (its `User-Agent`).
fn by_host(r: &RequestRecord) -> bool {
    r.user_agent
        .as_deref()
        .is_some_and(|a| a.starts_with("weir/"))
}

/// The path of the Deployments of [`NAMESPACE`], listed and watched by the host.
fn deployments_path() -> String {
    format!("/apis/apps/v1/namespaces/{NAMESPACE}/deployments")
}

/// Waits until `done` holds, checking the host is still running, for at most [`STEP`].
async fn until<F: Future<Output = Result<bool>>>(
    what: &str,
    host: &mut Children,
    done: impl Fn() -> F,
) -> Result<Duration> {
    let started = Instant::now();
    while !done().await? {
        host.check_running()?;
        if started.elapsed() > STEP {
            bail!("{what}: not within {} s", STEP.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(started.elapsed())
}

/// Installs the Spread plugin's CRD in `hub`, and the namespace.
async fn install(hub: &Emulator) -> Result<()> {
    let spread = weir_e2e::plugin("spread")?;
    let text = spread
        .info()
        .crd
        .clone()
        .context("the Spread plugin ships its CRD")?;
    let crd: CustomResourceDefinition =
        weir::yaml::from_str(&text).context("parsing Spread's CRD")?;
    Api::<CustomResourceDefinition>::all(hub.client())
        .create(&PostParams::default(), &crd)
        .await?;
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
    Api::<Namespace>::all(hub.client())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

/// Starts `weir run` serving the Spread on `hub`, following the member kubeconfigs of `clusters`.
fn spawn(binary: &Path, hub: &Emulator, dir: &Path) -> Result<(Children, std::net::SocketAddr)> {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins)?;
    let spread = super::root().join("target/plugins/spread.wasm");
    std::fs::copy(&spread, plugins.join("spread.wasm"))
        .with_context(|| format!("copying {}", spread.display()))?;
    let kubeconfig = dir.join("hub.yaml");
    hub.write_kubeconfig(&kubeconfig)?;
    // The operator lends the members' credentials to the Spread alone.
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, "plugins:\n  spread:\n    clusters: [\"*\"]\n")?;
    let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let mut args = RunArgs {
        cache_dir: dir.join("cache"),
        listen: ops.to_string(),
        namespace: Some(NAMESPACE.into()),
        ..RunArgs::plugins(&plugins, &kubeconfig)
    };
    args.extra = vec![
        "--clusters".into(),
        dir.join("clusters").into(),
        "--policy".into(),
        policy.into(),
    ];
    let child = args
        .command(binary)?
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    Ok((Children(vec![child]), ops))
}

/// `(name, old token, new token)` of each member: two ServiceAccounts the host may act as.
async fn accounts(members: &Members, names: &[String]) -> Result<Vec<(String, String, String)>> {
    let mut tokens = Vec::with_capacity(names.len());
    for name in names {
        let member = members.member(name)?;
        let old = account_token(member, NAMESPACE, "weir-old").await?;
        let new = account_token(member, NAMESPACE, "weir-new").await?;
        tokens.push((name.clone(), old, new));
    }
    Ok(tokens)
}

/// Runs the measurement.
pub async fn run(args: MembersArgs) -> Result<()> {
    let binary = weir_binary(args.weir.clone())?;
    let n = args.clusters.max(1);
    let hub = Emulator::start(EmulatorConfig::default()).await?;
    install(&hub).await?;
    let names: Vec<String> = (0..n).map(|i| format!("member-{i:04}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let started = Instant::now();
    let members = Members::start_secure(&refs, NAMESPACE).await?;
    let tokens = accounts(&members, &names).await?;
    eprintln!(
        "{n} secure member emulators up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let dir = tempfile::Builder::new()
        .prefix("weir-bench-members-")
        .tempdir()?;
    let clusters = dir.path().join("clusters");
    std::fs::create_dir_all(&clusters)?;
    let (mut host, ops) = spawn(&binary, &hub, dir.path())?;
    let metrics = || async move { ops_get(ops, "/metrics").await.unwrap_or_default() };
    until("the host serves /metrics", &mut host, || async {
        Ok(sample(&metrics().await, "weir_clusters_engaged").is_some())
    })
    .await?;
    tokio::time::sleep(IDLE).await;
    let before = host.rss_mib();
    let (anon_before, _) = host.rss_split_mib();

    // Engage: every kubeconfig written, then every member's first list.
    let at = Instant::now();
    let mut cursors: Vec<RequestCursor> = names.iter().map(|_| RequestCursor::default()).collect();
    for (name, old, _) in &tokens {
        write_token(
            members.member(name)?,
            &clusters.join(format!("{name}.yaml")),
            old,
        )?;
    }
    let mut listed = vec![false; n];
    let path = deployments_path();
    while listed.iter().any(|l| !l) {
        for (i, name) in names.iter().enumerate() {
            let seen = members.member(name)?.requests_since(&mut cursors[i]);
            listed[i] |= seen
                .iter()
                .any(|r| by_host(r) && r.path == path && !r.is_watch() && r.status == 200);
        }
        host.check_running()?;
        if at.elapsed() > STEP {
            let missing = listed.iter().filter(|l| !**l).count();
            bail!("{missing} of {n} members never served the host a list");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let engaged_in = at.elapsed();

    // A few children in each member.
    let spreads = Api::<DynamicObject>::namespaced_with(
        hub.client(),
        NAMESPACE,
        &kinds::spread().api_resource(),
    );
    // An answer holds at most 256 children: each Spread places in a slice of the members.
    for p in 0..args.parents {
        for (c, slice) in names.chunks(SPREAD_CLUSTERS).enumerate() {
            let spread: DynamicObject = serde_json::from_value(json!({
                "apiVersion": kinds::spread().api_version(), "kind": "Spread",
                "metadata": {"name": format!("s{p}-{c}")},
                "spec": {"image": "nginx", "clusters": slice},
            }))?;
            spreads.create(&PostParams::default(), &spread).await?;
        }
    }
    let placed_in = until("every member holds its children", &mut host, || async {
        for name in &names {
            let api = Api::<Deployment>::namespaced(members.client(name)?, NAMESPACE);
            if api.list(&ListParams::default()).await?.items.len() < args.parents {
                return Ok(false);
            }
        }
        Ok(true)
    })
    .await?;
    tokio::time::sleep(IDLE).await;
    let engaged = host.rss_mib();
    let (anon_engaged, _) = host.rss_split_mib();
    let text = metrics().await;
    let cached = sum(&text, "weir_cluster_cached_bytes");
    let objects = sum(&text, "weir_cluster_cached_objects");

    // Rotation: a token of another account in every file; the old accounts deleted; every
    // member's watches dropped, so that the host must open them again.
    let mut since: Vec<RequestCursor> = names
        .iter()
        .map(|name| Ok(members.member(name)?.request_cursor()))
        .collect::<Result<_>>()?;
    for (name, _, new) in &tokens {
        write_token(
            members.member(name)?,
            &clusters.join(format!("{name}.yaml")),
            new,
        )?;
    }
    let want = n as f64;
    let rotated_in = until("every member's credentials rotated", &mut host, || async {
        Ok(sample(&metrics().await, "weir_cluster_credentials_rotated") == Some(want))
    })
    .await?;
    for name in &names {
        let member = members.member(name)?;
        Api::<ServiceAccount>::namespaced(member.client(), NAMESPACE)
            .delete("weir-old", &DeleteParams::default())
            .await?;
        member.drop_watches();
    }
    let new_user = format!("system:serviceaccount:{NAMESPACE}:weir-new");
    let (mut lists, mut refused, mut rewatched) = (0usize, 0usize, vec![false; n]);
    let at = Instant::now();
    while rewatched.iter().any(|w| !w) {
        for (i, name) in names.iter().enumerate() {
            for r in members.member(name)?.requests_since(&mut since[i]) {
                if !by_host(&r) {
                    continue;
                }
                lists += usize::from(r.method == "GET" && !r.is_watch() && r.path == path);
                refused += usize::from(r.status == 401);
                rewatched[i] |=
                    r.is_watch() && r.path == path && r.user.as_deref() == Some(&new_user);
            }
        }
        host.check_running()?;
        if at.elapsed() > STEP {
            let missing = rewatched.iter().filter(|w| !**w).count();
            bail!("{missing} of {n} members never saw the host watch again under the new token");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rewatched_in = at.elapsed();
    tokio::time::sleep(IDLE).await;
    for (i, name) in names.iter().enumerate() {
        for r in members.member(name)?.requests_since(&mut since[i]) {
            lists +=
                usize::from(by_host(&r) && r.method == "GET" && !r.is_watch() && r.path == path);
            refused += usize::from(by_host(&r) && r.status == 401);
        }
    }
    let after = host.rss_mib();

    let per = |a: f64, b: f64| (a - b) * 1024.0 / n as f64;
    println!(
        "\n`weir run --clusters` ({}), {n} secure member clusters, {} Deployments in every \
         member, placed by Spreads in the hub\n",
        binary.display(),
        args.parents
    );
    println!("| measure | value |\n|---|---:|");
    println!("| host RSS idle, no member | {before:.1} MiB |");
    println!("| host RSS idle, {n} members engaged, children placed | {engaged:.1} MiB |");
    println!(
        "| **per engaged idle cluster** | **{:.0} KiB** (anonymous {:.0} KiB) |",
        per(engaged, before),
        per(anon_engaged, anon_before)
    );
    println!(
        "| its member caches (`/metrics`) | {objects:.0} objects, {:.0} KiB |",
        cached / 1024.0
    );
    println!(
        "| engage all (files written → every member listed) | {:.2} s |",
        engaged_in.as_secs_f64()
    );
    println!(
        "| children placed in every member | {:.2} s |",
        placed_in.as_secs_f64()
    );
    println!(
        "| rotate all (files rewritten → every rotation applied) | {:.2} s |",
        rotated_in.as_secs_f64()
    );
    println!(
        "| watches opened again under the new token (after the drop) | {:.2} s |",
        rewatched_in.as_secs_f64()
    );
    println!("| **lists after the rotation** | **{lists}** |");
    println!("| requests refused for their credentials | {refused} |");
    println!("| host RSS after the rotation | {after:.1} MiB |");
    drop(host);
    members.shutdown().await;
    hub.shutdown().await;
    Ok(())
}
