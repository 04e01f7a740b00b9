//! The host copies at most about the response cap out of a guest: a larger
//! answer is refused before the host allocates it (wasmtime's hostcall fuel),
//! and an answer just over the cap is measured and refused exactly.
//!
//! One test per file: it watches the memory of the whole process.

#![allow(clippy::unwrap_used, reason = "a test fails by panicking")]

use weir_test_support::guests;

use std::time::{Duration, Instant};

use weir::plugin::{CallError, Engine, EngineConfig, ErrorKind, Limits};

const MIB: usize = 1 << 20;

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// How far the process's peak resident memory rises above its current
/// resident memory while `f` runs (Linux: the peak is reset first).
fn peak_growth(f: impl FnOnce()) -> usize {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_bytes("VmRSS:");
    f();
    status_bytes("VmHWM:").saturating_sub(before)
}

#[test]
fn an_answer_far_over_the_cap_is_refused_without_the_host_copying_it() {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    // Room for a 64 MiB answer in the guest: the memory cap is not what stops it.
    let limits = Limits {
        memory: 128 * MIB,
        ..Limits::default()
    };
    let huge = engine
        .load_bytes(
            "huge.wasm",
            &guests::component(&guests::answer_of(64 * MIB), 1026),
            limits,
        )
        .unwrap();
    let over = engine
        .load_bytes(
            "over.wasm",
            &guests::component(&guests::answer_of(5 * MIB), 1026),
            limits,
        )
        .unwrap();

    // The measure can see a 64 MiB copy.
    let copy = peak_growth(|| drop(std::hint::black_box(vec![1u8; 64 * MIB])));
    assert!(
        copy >= 60 * MIB,
        "a 64 MiB copy raised the peak by {copy} bytes only"
    );

    let mut outcome = None;
    let started = Instant::now();
    let growth = peak_growth(|| outcome = Some(huge.reconcile(&guests::request("p"))));
    let took = started.elapsed();
    let err = outcome.unwrap().unwrap_err();

    match &err {
        CallError::ResponseTooLarge {
            plugin,
            size,
            limit,
            exact,
        } => {
            assert_eq!(plugin, "wat@0.1.0");
            assert_eq!(*limit, 4 * MIB);
            assert_eq!(*size, limits.host_copy_bytes());
            assert!(!exact);
        }
        other => panic!("expected ResponseTooLarge, got {other:?}"),
    }
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert_eq!(
        err.to_string(),
        format!(
            "plugin wat@0.1.0 answered over {} bytes, more than the 4194304-byte limit",
            limits.host_copy_bytes()
        )
    );
    assert!(
        growth < 16 * MIB,
        "the call raised the peak memory by {growth} bytes"
    );
    assert!(took < Duration::from_millis(500), "took {took:?}");

    // Just over the cap: copied (within the host-copy budget), measured, refused.
    let err = over.reconcile(&guests::request("p")).unwrap_err();
    assert!(
        matches!(err, CallError::ResponseTooLarge { size, exact: true, .. } if size == 5 * MIB),
        "{err:?}"
    );
}
