//! Emulator scale benchmark: does a write cost the same with 100,000 objects stored as with 1,000?
//!
//! Creates objects in batches of 1,000 and prints, per batch, the wall time and the CPU time of
//! the emulator's own thread (the emulator runs alone on a current-thread runtime, so the
//! client's work is not counted), then the memory per stored object against its JSON size.
//! Three profiles, each on a fresh emulator:
//! - `configmaps`: one ConfigMap per unit;
//! - `services`: one ClusterIP Service per unit (a cluster IP is allocated for each);
//! - `apps`: a Deployment of one replica and a Service selecting it per unit, with the workload
//!   simulation on, so each unit also makes a ReplicaSet, a Pod, Endpoints and an EndpointSlice
//!   (what a Blog's children become). Each batch is measured until the emulator is idle again.
//!
//! `cargo bench -p weir-emulator --bench scale`; `WEIR_SCALE_UNITS` (default 10,000) sets the
//! units per profile, `WEIR_SCALE_PROFILES` (default `configmaps,services,apps`) which profiles
//! run, `WEIR_SCALE_HISTORY` the watch history kept (default: the emulator's, 10,000 events;
//! the history holds the objects of its events, so a small one shows what the store alone
//! costs), `WEIR_SCALE_REQUEST_LOG` the request log kept (default: the emulator's, the last
//! 100,000 requests; `weir dev` and `weir emulator` keep none). Memory is RSS growth, so run one
//! profile per process for its figure. Figures and how to read them: `benches/README.md`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use self::common::rss_bytes;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

const BATCH: usize = 1_000;
const IN_FLIGHT: usize = 16;

/// An emulator serving on a thread of its own.
struct Isolated {
    emulator: Arc<Emulator>,
    /// The serving thread's id, for its CPU time.
    tid: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Isolated {
    fn start(config: EmulatorConfig) -> anyhow::Result<Self> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => return drop(ready_tx.send(Err(anyhow::Error::new(e)))),
            };
            rt.block_on(async move {
                let tid = std::fs::read_link("/proc/thread-self").map(|p| {
                    p.to_string_lossy()
                        .rsplit('/')
                        .next()
                        .unwrap_or("")
                        .to_string()
                });
                match (Emulator::start(config).await, tid) {
                    (Ok(em), Ok(tid)) => {
                        let em = Arc::new(em);
                        let _ = ready_tx.send(Ok((em.clone(), tid)));
                        let _ = stopped.await;
                    }
                    (Err(e), _) => drop(ready_tx.send(Err(e.into()))),
                    (_, Err(e)) => drop(ready_tx.send(Err(e.into()))),
                }
            });
        });
        let (emulator, tid) = ready_rx.recv()??;
        Ok(Isolated {
            emulator,
            tid,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// CPU time the serving thread has used (`/proc/.../schedstat`, nanoseconds on CPU).
    fn cpu(&self) -> Duration {
        let text = std::fs::read_to_string(format!("/proc/self/task/{}/schedstat", self.tid))
            .unwrap_or_default();
        let ns = text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        Duration::from_nanos(ns)
    }

    /// Wait until the emulator has used less than 2 ms of CPU over 200 ms.
    async fn idle(&self) {
        let mut last = self.cpu();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = self.cpu();
            if now - last < Duration::from_millis(2) {
                return;
            }
            last = now;
        }
    }

    /// A client on the caller's runtime (not the emulator's thread).
    fn client(&self) -> anyhow::Result<kube::Client> {
        let config = kube::Config::new(self.emulator.url().parse()?);
        Ok(kube::Client::try_from(config)?)
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Profile {
    ConfigMaps,
    Services,
    Apps,
}

impl Profile {
    fn name(self) -> &'static str {
        match self {
            Profile::ConfigMaps => "configmaps",
            Profile::Services => "services",
            Profile::Apps => "apps",
        }
    }

    /// The resources a unit of this profile ends up as, to sample their JSON size.
    fn sampled(self) -> &'static [&'static str] {
        match self {
            Profile::ConfigMaps => &["/api/v1/namespaces/default/configmaps"],
            Profile::Services => &["/api/v1/namespaces/default/services"],
            Profile::Apps => &[
                "/apis/apps/v1/namespaces/default/deployments",
                "/apis/apps/v1/namespaces/default/replicasets",
                "/api/v1/namespaces/default/pods",
                "/api/v1/namespaces/default/services",
                "/api/v1/namespaces/default/endpoints",
                "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            ],
        }
    }
}

fn configmap(i: usize) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("unit-{i:06}"), "labels": {"app": format!("unit-{i:06}")}},
        "data": {"index.html": format!("<h1>unit {i}</h1>"), "config.yaml": "replicas: 1\nimage: nginx:1.27\n"}
    }))?)
}

fn service(i: usize) -> anyhow::Result<Service> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("unit-{i:06}"), "labels": {"app": format!("unit-{i:06}")}},
        "spec": {"selector": {"app": format!("unit-{i:06}")}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    }))?)
}

fn deployment(i: usize) -> anyhow::Result<Deployment> {
    let app = format!("unit-{i:06}");
    Ok(serde_json::from_value(json!({
        "metadata": {"name": app, "labels": {"app": app}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}},
                 "template": {"metadata": {"labels": {"app": app}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}]}}}
    }))?)
}

async fn create_unit(client: kube::Client, profile: Profile, i: usize) -> anyhow::Result<()> {
    let pp = PostParams::default();
    match profile {
        Profile::ConfigMaps => {
            Api::<ConfigMap>::default_namespaced(client)
                .create(&pp, &configmap(i)?)
                .await?;
        }
        Profile::Services => {
            Api::<Service>::default_namespaced(client)
                .create(&pp, &service(i)?)
                .await?;
        }
        Profile::Apps => {
            Api::<Deployment>::default_namespaced(client.clone())
                .create(&pp, &deployment(i)?)
                .await?;
            Api::<Service>::default_namespaced(client)
                .create(&pp, &service(i)?)
                .await?;
        }
    }
    Ok(())
}

/// The JSON text of up to 50 stored objects of each sampled resource.
async fn sampled_json(client: &kube::Client, profile: Profile) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut texts = Vec::new();
    for path in profile.sampled() {
        let req = http::Request::get(format!("{path}?limit=50")).body(Vec::new())?;
        let list: Value = client.request(req).await?;
        for item in list["items"].as_array().into_iter().flatten() {
            texts.push(serde_json::to_vec(item)?);
        }
    }
    Ok(texts)
}

/// What one sampled object takes parsed into a `serde_json::Value` (the form the store kept
/// objects in before it kept their text): the RSS growth of holding 10,000 parsed copies.
fn parsed_size(texts: &[Vec<u8>]) -> anyhow::Result<f64> {
    const COPIES: usize = 10_000;
    let before = rss_bytes();
    let mut held = Vec::with_capacity(COPIES);
    for text in texts.iter().cycle().take(COPIES) {
        held.push(serde_json::from_slice::<Value>(text)?);
    }
    let grown = rss_bytes().saturating_sub(before) as f64 / COPIES as f64;
    drop(held);
    Ok(grown)
}

/// What to keep beside the store (`None`: the emulator's default).
#[derive(Clone, Copy)]
struct Kept {
    history: Option<usize>,
    request_log: Option<usize>,
}

async fn run(profile: Profile, units: usize, kept: Kept) -> anyhow::Result<()> {
    let workloads = (profile == Profile::Apps).then(|| WorkloadSimulation {
        ready_after: Duration::ZERO,
    });
    let defaults = EmulatorConfig::default();
    let em = Isolated::start(EmulatorConfig {
        workloads,
        watch_history: kept.history.unwrap_or(defaults.watch_history),
        request_log: kept.request_log.unwrap_or(defaults.request_log),
        ..defaults
    })?;
    let client = em.client()?;
    let objects_before = em.emulator.object_count();
    let rss_before = rss_bytes();
    println!("\n{} ({units} units, batches of {BATCH})", profile.name());
    println!(
        "{:>9}  {:>8}  {:>15}  {:>16}",
        "units", "wall s", "emulator CPU s", "stored objects"
    );
    let mut first_cpu = None;
    let mut last_cpu = Duration::ZERO;
    for start in (0..units).step_by(BATCH) {
        let cpu_before = em.cpu();
        let started = Instant::now();
        stream::iter(start..(start + BATCH).min(units))
            .map(|i| create_unit(client.clone(), profile, i))
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
        em.idle().await;
        let wall = started.elapsed();
        let cpu = em.cpu() - cpu_before;
        first_cpu.get_or_insert(cpu);
        last_cpu = cpu;
        println!(
            "{:>9}  {:>8.2}  {:>15.3}  {:>16}",
            (start + BATCH).min(units),
            wall.as_secs_f64(),
            cpu.as_secs_f64(),
            em.emulator.object_count()
        );
    }
    let stored = em.emulator.object_count() - objects_before;
    let per_object = rss_bytes().saturating_sub(rss_before) as f64 / stored.max(1) as f64;
    let texts = sampled_json(&client, profile).await?;
    let json_size = texts.iter().map(Vec::len).sum::<usize>() as f64 / texts.len().max(1) as f64;
    println!(
        "last batch / first batch CPU: {:.2}x; memory per stored object (RSS growth / {stored}): {per_object:.0} B, mean JSON {json_size:.0} B, ratio {:.1}x",
        last_cpu.as_secs_f64() / first_cpu.unwrap_or_default().as_secs_f64().max(1e-9),
        per_object / json_size.max(1.0)
    );
    println!(
        "the same objects parsed (serde_json::Value): {:.0} B each",
        parsed_size(&texts)?
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> anyhow::Result<()> {
    let number = |name: &str| std::env::var(name).ok().and_then(|n| n.parse().ok());
    let units: usize = number("WEIR_SCALE_UNITS").unwrap_or(10_000);
    let kept = Kept {
        history: number("WEIR_SCALE_HISTORY"),
        request_log: number("WEIR_SCALE_REQUEST_LOG"),
    };
    let profiles =
        std::env::var("WEIR_SCALE_PROFILES").unwrap_or_else(|_| "configmaps,services,apps".into());
    for name in profiles.split(',') {
        let profile = match name.trim() {
            "configmaps" => Profile::ConfigMaps,
            "services" => Profile::Services,
            "apps" => Profile::Apps,
            other => anyhow::bail!("unknown profile {other:?} (configmaps, services, apps)"),
        };
        run(profile, units, kept).await?;
    }
    Ok(())
}
