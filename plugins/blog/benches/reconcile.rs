//! The native Blog reconcile through the SDK's JSON path: what one call costs before any sandbox.
//!
//! `cargo bench -p weir-plugin-blog` — input: fixture 07 (a converged Blog
//! with its three children observed), the host's steady-state case.

#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented functions"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use weir_guest_sdk::{Child, testing};
use weir_plugin_blog::BlogReconciler;

fn input() -> (Value, Vec<Value>) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/07-deployment-ready.yaml"
    );
    let case: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap_or_default())
        .unwrap_or_default();
    let observed = case["observed"].as_array().cloned().unwrap_or_default();
    (case["parent"].clone(), observed)
}

fn reconcile(c: &mut Criterion) {
    let (parent, observed) = input();
    assert_eq!(observed.len(), 3, "fixture 07 must hold the three children");
    c.bench_function("blog reconcile (native, SDK JSON path)", |b| {
        b.iter(|| {
            let observed = observed.iter().cloned().map(Child::json).collect();
            testing::reconcile::<BlogReconciler>(&parent, observed)
        })
    });
}

criterion_group!(benches, reconcile);
criterion_main!(benches);
