//! Prints the benchmark table: median µs per Blog reconcile for each way of
//! running it, and the ratio to the native function, all from one run.
//!
//! `cargo bench -p weir --bench table` (after `plugins/build.sh`).

mod common;

use std::time::{Duration, Instant};

use common::{Input, Webhook};
use weir::plugin::ReusedInstance;

const WARMUP: usize = 300;
const SAMPLES: usize = 3000;

/// Times `SAMPLES` single calls after a warm-up; returns (median, p90).
fn measure(
    mut call: impl FnMut() -> anyhow::Result<common::Answer>,
) -> anyhow::Result<(Duration, Duration)> {
    for _ in 0..WARMUP {
        std::hint::black_box(call()?);
    }
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        std::hint::black_box(call()?);
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok((samples[SAMPLES / 2], samples[SAMPLES * 9 / 10]))
}

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; there is nothing to configure.
    let input = Input::load()?;
    let fresh = common::blog_plugin(true)?;
    let on_demand = common::blog_plugin(false)?;
    let mut reused = ReusedInstance::new(fresh.clone());
    let mut webhook = Webhook::start()?;

    common::check_agree(&[
        ("native", common::native(&input)?),
        ("wasm fresh", common::wasm_fresh(&fresh, &input)?),
        (
            "wasm fresh (on-demand)",
            common::wasm_fresh(&on_demand, &input)?,
        ),
        ("wasm reused", common::wasm_reused(&mut reused, &input)?),
        ("http", webhook.call(&input)?),
    ])?;

    let rows = [
        (
            "(a) native Rust function",
            measure(|| common::native(&input))?,
        ),
        (
            "(b) WASM, fresh instance per call (pooling allocator: the host's default)",
            measure(|| common::wasm_fresh(&fresh, &input))?,
        ),
        (
            "(b') WASM, fresh instance per call, on-demand allocator",
            measure(|| common::wasm_fresh(&on_demand, &input))?,
        ),
        (
            "(c) WASM, reused instance",
            measure(|| common::wasm_reused(&mut reused, &input))?,
        ),
        (
            "(d) native behind keep-alive HTTP on loopback",
            measure(|| webhook.call(&input))?,
        ),
    ];

    let base = rows[0].1.0.as_secs_f64();
    println!(
        "Blog reconcile, input {} ({} bytes of JSON), {SAMPLES} calls each after {WARMUP} warm-up calls\n",
        common::FIXTURE,
        input.json_bytes()
    );
    println!("| variant | median µs | p90 µs | median / (a) |");
    println!("|---|---:|---:|---:|");
    for (name, (median, p90)) in rows {
        println!(
            "| {name} | {:.1} | {:.1} | {:.2}× |",
            median.as_secs_f64() * 1e6,
            p90.as_secs_f64() * 1e6,
            median.as_secs_f64() / base
        );
    }
    Ok(())
}
