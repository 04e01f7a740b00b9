//! Hand-written guests in WebAssembly text, made into `weir:reconciler`
//! components with wit-component: each does one precise thing no compiled
//! plugin would (sleep in the host, return an answer of an exact size).

#![allow(
    clippy::unwrap_used,
    reason = "test fixtures from constant texts: a failed build is a failed test"
)]

use serde_json::json;
use weir::plugin::ReconcileRequest;

/// `reconcile` body: waits ten seconds in WASI (`monotonic-clock.subscribe-duration`,
/// then `pollable.block`), blocking in host code where epochs do not reach.
pub const SLEEP_TEN_SECONDS: &str =
    "(call $block (call $subscribe (i64.const 10000000000))) (call $error (i32.const 0))";

/// `reconcile` body: spins in wasm code.
pub const LOOP_FOREVER: &str = "(loop $spin (br $spin)) (call $error (i32.const 0))";

/// `reconcile` body: answers one child of `bytes` bytes (zeros, valid UTF-8)
/// at address 65536, without writing it.
pub fn answer_of(bytes: usize) -> String {
    format!("(call $one_child (i32.const 65536) (i32.const {bytes}))")
}

/// Address where the guest keeps its answer (a `result<reconcile-response, reconcile-error>`).
const RESULT: u32 = 512;

/// A component of the `reconciler` world (plus the two WASI functions a
/// sleeper needs) whose `reconcile` runs `body`; `describe` names it `wat@0.1.0`.
/// `pages` is the guest's initial memory in 64 KiB pages.
pub fn component(body: &str, pages: u32) -> Vec<u8> {
    let module = wat::parse_str(module(body, pages)).unwrap();
    let mut resolve = wit_parser::Resolve::default();
    resolve.push_str("io.wit", WASI_IO).unwrap();
    resolve.push_str("clocks.wit", WASI_CLOCKS).unwrap();
    let wit = contract().replace(
        "world reconciler {",
        "world reconciler {\n    import wasi:clocks/monotonic-clock@0.2.0;\n    import wasi:io/poll@0.2.0;",
    );
    let pkg = resolve.push_str("reconciler.wit", &wit).unwrap();
    let world = resolve.select_world(&[pkg], Some("reconciler")).unwrap();
    encode(module, &resolve, world)
}

/// A component of `world` in `wit` whose every export traps (wit-component's dummy module).
pub fn dummy_component(wit: &str, world: &str) -> Vec<u8> {
    let mut resolve = wit_parser::Resolve::default();
    let pkg = resolve.push_str("test.wit", wit).unwrap();
    let world = resolve.select_world(&[pkg], Some(world)).unwrap();
    let mangling = wit_parser::ManglingAndAbi::Legacy(wit_parser::LiftLowerAbi::Sync);
    encode(
        wit_component::dummy_module(&resolve, world, mangling),
        &resolve,
        world,
    )
}

/// `module` with `world`'s metadata embedded, encoded as a component.
fn encode(
    mut module: Vec<u8>,
    resolve: &wit_parser::Resolve,
    world: wit_parser::WorldId,
) -> Vec<u8> {
    wit_component::embed_component_metadata(
        &mut module,
        resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .unwrap()
        .encode()
        .unwrap()
}

/// A request for the parent `name` of kind `Wat`, with no children or related objects.
pub fn request(name: &str) -> ReconcileRequest {
    let parent = json!({"apiVersion": "test.weir.dev/v1", "kind": "Wat",
        "metadata": {"name": name, "namespace": "default"}});
    ReconcileRequest {
        parent: parent.to_string(),
        children: vec![],
        related: vec![],
        ..Default::default()
    }
}

/// The 0.1.0 contract's text (`wit/reconciler.wit`).
pub fn contract() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/reconciler.wit");
    std::fs::read_to_string(path).unwrap()
}

/// The parts of WASI 0.2 the sleeper imports (the host links all of 0.2).
const WASI_IO: &str = "package wasi:io@0.2.0;
interface poll {
    resource pollable {
        block: func();
    }
}";

const WASI_CLOCKS: &str = "package wasi:clocks@0.2.0;
interface monotonic-clock {
    use wasi:io/poll@0.2.0.{pollable};
    type duration = u64;
    subscribe-duration: func(when: duration) -> pollable;
}";

/// The core module, in the canonical ABI's layouts: `plugin-info` at 256
/// (strings at 1024), the answer at [`RESULT`], a bump allocator from 4096.
fn module(body: &str, pages: u32) -> String {
    format!(
        r#"(module
  (import "wasi:clocks/monotonic-clock@0.2.0" "subscribe-duration" (func $subscribe (param i64) (result i32)))
  (import "wasi:io/poll@0.2.0" "[method]pollable.block" (func $block (param i32)))
  (memory (export "memory") {pages})
  (global $next (mut i32) (i32.const 4096))
  (data (i32.const 1024) "wat")
  (data (i32.const 1032) "0.1.0")
  (data (i32.const 1040) "test.weir.dev")
  (data (i32.const 1056) "v1")
  (data (i32.const 1060) "Wat")
  (data (i32.const 1064) "wats")
  (data (i32.const 1072) "wat: gave up")
  (func $string (param $at i32) (param $ptr i32) (param $len i32)
    (i32.store (local.get $at) (local.get $ptr))
    (i32.store offset=4 (local.get $at) (local.get $len)))
  (func (export "describe") (result i32)
    (call $string (i32.const 256) (i32.const 1024) (i32.const 3))
    (call $string (i32.const 264) (i32.const 1032) (i32.const 5))
    (call $string (i32.const 272) (i32.const 1040) (i32.const 13))
    (call $string (i32.const 280) (i32.const 1056) (i32.const 2))
    (call $string (i32.const 288) (i32.const 1060) (i32.const 3))
    (call $string (i32.const 296) (i32.const 1064) (i32.const 4))
    (i32.store8 (i32.const 304) (i32.const 1))
    (call $string (i32.const 308) (i32.const 0) (i32.const 0))
    (i32.store8 (i32.const 316) (i32.const 0))
    (i32.store8 (i32.const 328) (i32.const 0))
    (i32.const 256))
  ;; err(reconcile-error {{ kind: permanent, message: "wat: gave up" }})
  (func $error (param i32) (result i32)
    (i32.store8 (i32.const {RESULT}) (i32.const 1))
    (i32.store8 (i32.const {RESULT_PAYLOAD}) (i32.const 1))
    (call $string (i32.const {ERROR_MESSAGE}) (i32.const 1072) (i32.const 12))
    (i32.const {RESULT}))
  ;; ok(reconcile-response {{ children: [the string at $ptr], status: none, requeue: done }})
  (func $one_child (param $ptr i32) (param $len i32) (result i32)
    (call $string (i32.const 600) (local.get $ptr) (local.get $len))
    (i32.store8 (i32.const {RESULT}) (i32.const 0))
    (call $string (i32.const {RESULT_PAYLOAD}) (i32.const 600) (i32.const 1))
    (i32.store8 (i32.const {STATUS}) (i32.const 0))
    (i32.store8 (i32.const {REQUEUE}) (i32.const 0))
    (i32.const {RESULT}))
  (func (export "reconcile") (param i32 i32 i32 i32) (result i32)
    {body})
  (func (export "finalize") (param i32 i32 i32 i32 i32 i32) (result i32)
    (call $error (i32.const 0)))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    ;; align up, then bump
    (local.set $at (i32.and
      (i32.add (global.get $next) (i32.sub (local.get 2) (i32.const 1)))
      (i32.sub (i32.const 0) (local.get 2))))
    (global.set $next (i32.add (local.get $at) (local.get 3)))
    (local.get $at)))"#,
        RESULT_PAYLOAD = RESULT + 8,
        ERROR_MESSAGE = RESULT + 12,
        STATUS = RESULT + 16,
        REQUEUE = RESULT + 32,
    )
}
