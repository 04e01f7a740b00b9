//! Builds of the Blog component side by side: each one's fresh call against the native function,
//! interleaved call by call in one process, with the stages of its fresh call.
//!
//! `table` and `languages` time one build after another, so on a loaded machine two runs differ
//! by more than what a build changes; here every round times the native function and each build
//! in turn, so they share the machine's load. Each build also says how many bytes the pool kept
//! resident after one call (the pages the guest wrote, which the slot's reset puts back).
//!
//! ```text
//! WEIR_PROBE=a.wasm,b.wasm cargo bench -p weir --bench probe   # default: target/plugins/blog.wasm
//! ```

#[expect(
    dead_code,
    reason = "the probe uses the input and the fresh call, not the other variants"
)]
mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use common::Input;
use weir::plugin::{Engine, EngineConfig, Limits, Phases, Plugin};

/// Calls per build and round, after `WARMUP`.
const CALLS: usize = 400;
const WARMUP: usize = 100;
const ROUNDS: usize = 3;

fn median_us(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e6
}

fn main() -> anyhow::Result<()> {
    let input = Input::load()?;
    let request = input.request();
    let paths: Vec<PathBuf> = match std::env::var("WEIR_PROBE") {
        Ok(list) => list.split(',').map(PathBuf::from).collect(),
        Err(_) => {
            vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins/blog.wasm")]
        }
    };
    // An engine per build, so each build's pool figure is its own.
    let mut builds: Vec<(String, Plugin)> = Vec::new();
    for path in &paths {
        let engine = Engine::new(EngineConfig::default())?;
        let plugin = engine
            .load_file(path, Limits::default())
            .with_context(|| format!("loading {}", path.display()))?;
        common::check_agree(&[
            ("native", common::native(&input)?),
            ("this build", common::wasm_fresh(&plugin, &input)?),
        ])
        .with_context(|| format!("{} is not the Blog", path.display()))?;
        println!(
            "{}: {} bytes, {} bytes compiled; the pool keeps {} bytes resident after one call",
            path.display(),
            std::fs::metadata(path)?.len(),
            engine.code_bytes().values().sum::<u64>(),
            engine.pool_resident_bytes()
        );
        builds.push((path.display().to_string(), plugin));
    }
    for round in 0..ROUNDS {
        let mut native = Vec::with_capacity(CALLS);
        let mut fresh = vec![Vec::with_capacity(CALLS); builds.len()];
        let mut stages: Vec<Vec<Phases>> = vec![Vec::with_capacity(CALLS); builds.len()];
        for _ in 0..WARMUP {
            common::native(&input)?;
            for (_, plugin) in &builds {
                common::wasm_fresh(plugin, &input)?;
            }
        }
        for _ in 0..CALLS {
            let start = Instant::now();
            std::hint::black_box(common::native(&input)?);
            native.push(start.elapsed());
            for (i, (_, plugin)) in builds.iter().enumerate() {
                let start = Instant::now();
                std::hint::black_box(common::wasm_fresh(plugin, &input)?);
                fresh[i].push(start.elapsed());
                stages[i].push(plugin.reconcile_timed(&request)?.1);
            }
        }
        let native = median_us(native);
        println!("round {round}: native {native:.1} µs");
        for (i, (name, _)) in builds.iter().enumerate() {
            let stage = |of: fn(&Phases) -> Duration| median_us(stages[i].iter().map(of).collect());
            let call = median_us(fresh[i].clone());
            println!(
                "  {name}: fresh {call:.1} µs = {:.2}× native | store {:.1} instantiate {:.1} \
                 lower {:.1} guest {:.1} lift {:.1} drop {:.1} check {:.1}",
                call / native,
                stage(|p| p.store),
                stage(|p| p.instantiate),
                stage(|p| p.lower),
                stage(|p| p.guest),
                stage(|p| p.lift),
                stage(|p| p.drop),
                stage(|p| p.check),
            );
        }
    }
    Ok(())
}
