#!/usr/bin/env bash
# Installs the C guest SDK's toolchain (guest-sdk/c/bin/weir-c uses it):
#   Debian's clang-19, lld-19 (wasm-ld-19), wasi-libc and the wasm32 compiler-rt builtins (apt-get)
#   wasm-component-ld at the version pinned here, into target/tools/bin: copied from the Rust
#   toolchain, which ships it as the linker of its wasm32-wasip2 target, when the toolchain's is
#   that version; otherwise built from crates.io (cargo install --locked: the versions its own
#   lockfile pins; a few CPU-minutes on a new machine).
# The contract's C bindings are not generated here: wit-bindgen's output is kept in
# guest-sdk/c/bindings (guest-sdk/c/bindgen.sh writes it).
# Idempotent: each step is skipped while what it installs is there at its version.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools="$root/target/tools"
# The version Rust 1.95's toolchain ships (rustc's own copy is then used; see above).
WASM_COMPONENT_LD_VERSION=0.5.21

packages=()
command -v clang-19 >/dev/null || packages+=(clang-19)
command -v wasm-ld-19 >/dev/null || packages+=(lld-19)
[[ -f /usr/lib/wasm32-wasi/libc.a ]] || packages+=(wasi-libc)
[[ -f /usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a ]] || packages+=(libclang-rt-19-dev-wasm32)
if [[ ${#packages[@]} -gt 0 ]]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
fi

# wasm-component-ld at $WASM_COMPONENT_LD_VERSION in target/tools/bin (a copy, not a link: a later
# toolchain update does not change it under the SDK).
bin="$tools/bin/wasm-component-ld"
if [[ "$("$bin" --version 2>/dev/null)" != "wasm-component-ld $WASM_COMPONENT_LD_VERSION" ]]; then
  shipped=
  if command -v rustc >/dev/null; then
    shipped="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/wasm-component-ld"
  fi
  if [[ -n "$shipped" && "$("$shipped" --version 2>/dev/null)" == "wasm-component-ld $WASM_COMPONENT_LD_VERSION" ]]; then
    mkdir -p "$tools/bin"
    rm -f "$bin"  # not written in place: it may be running, or a link to another checkout's
    cp "$shipped" "$bin"
  else
    cargo install --quiet --root "$tools" --locked wasm-component-ld --version "$WASM_COMPONENT_LD_VERSION"
  fi
fi
