//! `weir run` compiles a component its cache lacks in a short-lived child process
//! (`weir compile-plugin`), so the compiler's memory peak is not the host's; the host maps the
//! artifact the child stored. A component that does not compile gets the same error as when
//! the host compiles it itself.

use crate::built;

use weir::plugin::{Engine, EngineConfig, Limits};

fn engine(cache: &std::path::Path, apart: bool) -> Engine {
    Engine::new(EngineConfig {
        cache_dir: Some(cache.to_owned()),
        compiler: apart.then(|| env!("CARGO_BIN_EXE_weir").into()),
        ..EngineConfig::default()
    })
    .unwrap()
}

#[test]
fn a_component_the_cache_lacks_is_compiled_by_a_child_and_served_from_its_artifact() {
    let cache = tempfile::tempdir().unwrap();
    let host = engine(cache.path(), true);
    let plugin = host
        .load_file(&built("blog.wasm"), Limits::default())
        .unwrap();
    assert_eq!(host.compiled_apart(), 1, "the child compiled it");
    assert_eq!(plugin.info().parent.kind, "Blog");

    // Loaded again by another host on the same cache: mapped, compiled by nobody.
    let restarted = engine(cache.path(), true);
    restarted
        .load_file(&built("blog.wasm"), Limits::default())
        .unwrap();
    assert_eq!(restarted.compiled_apart(), 0, "found in the cache");
}

#[test]
fn a_component_that_does_not_compile_gets_the_same_error_as_in_process() {
    let dir = tempfile::tempdir().unwrap();
    // A component's header followed by nothing valid.
    let mut bytes = b"\0asm\x0d\0\x01\0".to_vec();
    bytes.extend_from_slice(&[0xff; 16]);
    let file = dir.path().join("broken.wasm");
    std::fs::write(&file, &bytes).unwrap();
    let error = |apart: bool| {
        let cache = tempfile::tempdir().unwrap();
        let host = engine(cache.path(), apart);
        let error = match host.load_file(&file, Limits::default()) {
            Ok(_) => panic!("a broken component loaded"),
            Err(e) => format!("{:#}", anyhow::Error::new(e)),
        };
        (error, host.compiled_apart())
    };
    let (apart, compiled) = error(true);
    assert_eq!(compiled, 0);
    assert_eq!(apart, error(false).0);
    assert!(apart.contains("cannot compile plugin"), "{apart}");
}

#[test]
fn the_compiling_child_refuses_to_run_without_a_cache() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["--no-cache", "compile-plugin", "--sha256", "00"])
        .stdin(std::fs::File::open(built("blog.wasm")).unwrap())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no precompiled cache"), "{stderr}");
}
