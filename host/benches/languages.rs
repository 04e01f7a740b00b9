//! Load and call costs of the Blog plugin in Rust, Python, JavaScript and C, and where a call's time goes.
//!
//! Python and JavaScript components carry their interpreter (12–20 MB), so
//! what matters for them is whether the precompiled cache makes a restart
//! cheap, and whether a fresh instance per call is affordable. Run after
//! `plugins/build.sh all`:
//!
//! ```text
//! cargo bench -p weir --bench languages                 # release build of the host
//! cargo bench -p weir --bench languages --profile dev   # reuses the test build (dependencies at opt-level 2)
//! ```
//!
//! Every row runs the same request (the parent and observed children of
//! `plugins/blog/fixtures/07-deployment-ready.yaml`) in one process, so the
//! ratios to the Rust row compare like with like. A second table splits a fresh-instance call
//! into its stages (`Plugin::reconcile_timed`): median µs of each stage over the same calls.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use weir::plugin::{
    Engine, EngineConfig, Limits, Phases, Plugin, PluginInfo, ReconcileRequest, ReusedInstance,
};

/// (row label, component file under target/plugins).
const PLUGINS: [(&str, &str); 4] = [
    ("Rust", "blog.wasm"),
    ("Python", "blog-py.wasm"),
    ("JavaScript", "blog-js.wasm"),
    ("C", "blog-c.wasm"),
];
/// Restarts measured against a warm cache, per language.
const CACHED_LOADS: usize = 5;
/// Calls per way of calling, after warm-up.
const CALLS: usize = 200;
const WARMUP: usize = 10;

struct Row {
    label: &'static str,
    size: u64,
    cold: Duration,
    cached: Duration,
    cached_verified: Duration,
    fresh_pooled: Duration,
    fresh_on_demand: Duration,
    reused: Duration,
    /// Medians of each stage of a fresh-instance call (pooling allocator).
    phases: Phases,
    /// A fresh instance + call with the whole memory limit kept resident between instances.
    fresh_resident: Duration,
}

fn main() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let request = request(&root.join("plugins/blog/fixtures/07-deployment-ready.yaml"))?;
    let mut rows = Vec::new();
    let mut reference: Option<PluginInfo> = None;
    for (label, file) in PLUGINS {
        let path = root.join("target/plugins").join(file);
        if !path.exists() {
            bail!(
                "{} is missing: build it with `plugins/build.sh all`",
                path.display()
            );
        }
        eprintln!("measuring {label} ({})", path.display());
        let (row, info) = measure(label, &path, &request)
            .with_context(|| format!("measuring {}", path.display()))?;
        match &reference {
            None => reference = Some(info),
            Some(rust) => same_plugin(rust, &info)
                .with_context(|| format!("{} is not the Rust Blog", path.display()))?,
        }
        rows.push(row);
    }
    print_table(&rows);
    print_phases(&rows);
    Ok(())
}

/// The fixture's parent and observed children, as the host would send them.
fn request(fixture: &Path) -> anyhow::Result<ReconcileRequest> {
    let text = std::fs::read_to_string(fixture)
        .with_context(|| format!("reading {}", fixture.display()))?;
    let case: serde_json::Value = weir::yaml::from_str(&text)?;
    let children = case["observed"].as_array().cloned().unwrap_or_default();
    Ok(ReconcileRequest {
        clusters: Default::default(),
        parent: serde_json::to_string(&case["parent"])?,
        children: children
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<_, _>>()?,
        related: Vec::new(),
    })
}

/// The ports must describe themselves as the Rust plugin does, CRD included
/// (compared as data: the Rust plugin sends JSON, the ports embed the YAML file).
fn same_plugin(rust: &PluginInfo, port: &PluginInfo) -> anyhow::Result<()> {
    let identity = |i: &PluginInfo| {
        (
            i.name.clone(),
            i.version.clone(),
            i.parent.clone(),
            i.children.clone(),
            i.finalizer.clone(),
        )
    };
    if identity(rust) != identity(port) {
        bail!("describe differs: {port:?}");
    }
    let crd = |i: &PluginInfo| -> anyhow::Result<Option<serde_json::Value>> {
        Ok(i.crd.as_deref().map(weir::yaml::from_str).transpose()?)
    };
    if crd(rust)? != crd(port)? {
        bail!("its CRD differs from the Rust plugin's");
    }
    Ok(())
}

fn measure(
    label: &'static str,
    path: &Path,
    request: &ReconcileRequest,
) -> anyhow::Result<(Row, PluginInfo)> {
    let cache = tempfile::tempdir()?;
    let engine = |pooling: bool| {
        Engine::new(EngineConfig {
            cache_dir: Some(cache.path().to_owned()),
            pooling,
            ..EngineConfig::default()
        })
    };
    let resident = Engine::new(EngineConfig {
        cache_dir: Some(cache.path().to_owned()),
        keep_resident: Limits::default().memory,
        ..EngineConfig::default()
    })?;
    let pooling = EngineConfig::default().pooling;

    // Cold: an empty cache, so this is the compile (plus writing the artifact).
    let start = Instant::now();
    let plugin = engine(pooling)?.load_file(path, Limits::default())?;
    let cold = start.elapsed();

    // Cached: a new engine each time, as after a restart of the host.
    let mut loads = Vec::with_capacity(CACHED_LOADS);
    for _ in 0..CACHED_LOADS {
        let fresh_engine = engine(pooling)?;
        let start = Instant::now();
        fresh_engine.load_file(path, Limits::default())?;
        loads.push(start.elapsed());
    }
    // The same with the digest known (the cluster source verified it when it
    // stored the component): the component is neither read nor hashed.
    let sha256 = plugin.sha256().to_owned();
    let mut verified = Vec::with_capacity(CACHED_LOADS);
    for _ in 0..CACHED_LOADS {
        let fresh_engine = engine(pooling)?;
        let start = Instant::now();
        fresh_engine.load_verified(path, &sha256, Limits::default())?;
        verified.push(start.elapsed());
    }

    // The same plugin under the other instance allocator, to show what it buys.
    let other = engine(!pooling)?.load_file(path, Limits::default())?;
    let (pooled, on_demand) = if pooling {
        (&plugin, &other)
    } else {
        (&other, &plugin)
    };
    let fresh_pooled = median_call(|| pooled.reconcile(request).map(drop))?;
    let fresh_on_demand = median_call(|| on_demand.reconcile(request).map(drop))?;
    let mut kept = ReusedInstance::new(plugin.clone());
    let reused = median_call(|| kept.reconcile(request).map(drop))?;
    let phases = median_phases(pooled, request)?;
    let resident = resident.load_file(path, Limits::default())?;
    let fresh_resident = median_call(|| resident.reconcile(request).map(drop))?;
    check_answer(&plugin, request)?;
    let row = Row {
        label,
        size: std::fs::metadata(path)?.len(),
        cold,
        cached: median(loads),
        cached_verified: median(verified),
        fresh_pooled,
        fresh_on_demand,
        reused,
        phases,
        fresh_resident,
    };
    Ok((row, plugin.info().clone()))
}

/// A benchmark of a plugin that fails is no benchmark: the answer must be the Blog's three children.
fn check_answer(plugin: &Plugin, request: &ReconcileRequest) -> anyhow::Result<()> {
    let answer = plugin.reconcile(request)?;
    if answer.children.len() != 3 {
        bail!(
            "{} answered {} children, not 3",
            plugin.label(),
            answer.children.len()
        );
    }
    Ok(())
}

fn median_call<E: std::error::Error + Send + Sync + 'static>(
    mut call: impl FnMut() -> Result<(), E>,
) -> anyhow::Result<Duration> {
    for _ in 0..WARMUP {
        call()?;
    }
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let start = Instant::now();
        call()?;
        times.push(start.elapsed());
    }
    Ok(median(times))
}

/// Each stage's median over `CALLS` timed fresh-instance calls, after warm-up.
fn median_phases(plugin: &Plugin, request: &ReconcileRequest) -> anyhow::Result<Phases> {
    for _ in 0..WARMUP {
        plugin.reconcile_timed(request)?;
    }
    let mut all = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        all.push(plugin.reconcile_timed(request)?.1);
    }
    let stage = |of: fn(&Phases) -> Duration| median(all.iter().map(of).collect());
    Ok(Phases {
        store: stage(|p| p.store),
        instantiate: stage(|p| p.instantiate),
        lower: stage(|p| p.lower),
        guest: stage(|p| p.guest),
        lift: stage(|p| p.lift),
        drop: stage(|p| p.drop),
        check: stage(|p| p.check),
    })
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn print_table(rows: &[Row]) {
    let Some(rust) = rows.first() else { return };
    // A duration in `unit`, with its ratio to the Rust row's.
    let cell = |value: Duration, of_rust: Duration, scale: f64, unit: &str| {
        let ratio = value.as_secs_f64() / of_rust.as_secs_f64().max(f64::MIN_POSITIVE);
        format!("{:.1} {unit} ({ratio:.1}×)", value.as_secs_f64() * scale)
    };
    println!();
    println!(
        "| language | component | cold load (compile) | cached load | cached load, digest known | fresh instance + call, pooling \
         | fresh instance + call, on demand | reused instance call | fresh (pooling) / reused |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {:.1} MB | {} | {} | {} | {} | {} | {} | {:.1}× |",
            r.label,
            r.size as f64 / 1e6,
            cell(r.cold, rust.cold, 1e3, "ms"),
            cell(r.cached, rust.cached, 1e3, "ms"),
            cell(r.cached_verified, rust.cached_verified, 1e3, "ms"),
            cell(r.fresh_pooled, rust.fresh_pooled, 1e6, "µs"),
            cell(r.fresh_on_demand, rust.fresh_on_demand, 1e6, "µs"),
            cell(r.reused, rust.reused, 1e6, "µs"),
            r.fresh_pooled.as_secs_f64() / r.reused.as_secs_f64().max(f64::MIN_POSITIVE),
        );
    }
    println!();
    println!(
        "medians: cached load over {CACHED_LOADS} restarts (new engine, warm precompiled cache; \
         with the digest known the component is neither read nor hashed), calls over {CALLS}; \
         (n×) = ratio to the Rust row; request = fixture 07 (parent + 3 observed children)"
    );
}

fn print_phases(rows: &[Row]) {
    let us = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e6);
    println!();
    println!(
        "| language | store | instantiate | lower | guest | lift | drop | check | sum of stages | fresh instance + call \
         | the same, {} MiB kept resident | reused instance call |",
        Limits::default().memory >> 20
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let p = &r.phases;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.label,
            us(p.store),
            us(p.instantiate),
            us(p.lower),
            us(p.guest),
            us(p.lift),
            us(p.drop),
            us(p.check),
            us(p.total()),
            us(r.fresh_pooled),
            us(r.fresh_resident),
            us(r.reused),
        );
    }
    println!();
    println!(
        "µs per reconcile, medians of each stage over {CALLS} timed fresh-instance calls \
         (`Plugin::reconcile_timed`, pooling allocator); the last two columns are the untimed \
         calls of the first table (the second with `EngineConfig::keep_resident` at the \
         memory limit instead of {} MiB)",
        weir::plugin::POOL_KEEP_RESIDENT >> 20
    );
}
