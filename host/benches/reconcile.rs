//! Criterion benchmark of one Blog reconcile, run four ways (see `common`).
//!
//! `cargo bench -p weir --bench reconcile` (after `plugins/build.sh`);
//! `--bench table` prints the same comparison as one table.

#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use weir::plugin::ReusedInstance;

#[expect(
    clippy::unwrap_used,
    reason = "a benchmark without its setup has nothing to measure"
)]
fn blog_reconcile(c: &mut Criterion) {
    let input = common::Input::load().unwrap();
    let fresh = common::blog_plugin(true).unwrap();
    let on_demand = common::blog_plugin(false).unwrap();
    let mut reused = ReusedInstance::new(fresh.clone());
    let mut webhook = common::Webhook::start().unwrap();
    common::check_agree(&[
        ("native", common::native(&input).unwrap()),
        ("wasm fresh", common::wasm_fresh(&fresh, &input).unwrap()),
        (
            "wasm reused",
            common::wasm_reused(&mut reused, &input).unwrap(),
        ),
        ("http", webhook.call(&input).unwrap()),
    ])
    .unwrap();

    let mut group = c.benchmark_group("blog_reconcile");
    group.throughput(Throughput::Bytes(input.json_bytes() as u64));
    group.bench_function("a_native", |b| b.iter(|| common::native(&input).unwrap()));
    group.bench_function("b_wasm_fresh", |b| {
        b.iter(|| common::wasm_fresh(&fresh, &input).unwrap())
    });
    group.bench_function("b_wasm_fresh_on_demand", |b| {
        b.iter(|| common::wasm_fresh(&on_demand, &input).unwrap())
    });
    group.bench_function("c_wasm_reused", |b| {
        b.iter(|| common::wasm_reused(&mut reused, &input).unwrap())
    });
    group.bench_function("d_http_loopback", |b| {
        b.iter(|| webhook.call(&input).unwrap())
    });
    group.finish();
}

criterion_group!(benches, blog_reconcile);
criterion_main!(benches);
