#!/usr/bin/env bash
# Installs the C guest SDK's toolchain (guest-sdk/c/bin/weir-c uses it):
#   Debian's clang-19, lld-19 (wasm-ld-19), wasi-libc and the wasm32 compiler-rt builtins (apt-get)
#   wit-bindgen (the `c` generator only) and wasm-component-ld from crates.io, versions pinned
#   here, into target/tools/bin (cargo install --locked: the versions their own lockfiles pin).
# Idempotent: each step is skipped while what it installs is there at its version.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools="$root/target/tools"
WIT_BINDGEN_VERSION=0.63.0
WASM_COMPONENT_LD_VERSION=0.5.31

packages=()
command -v clang-19 >/dev/null || packages+=(clang-19)
command -v wasm-ld-19 >/dev/null || packages+=(lld-19)
[[ -f /usr/lib/wasm32-wasi/libc.a ]] || packages+=(wasi-libc)
[[ -f /usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a ]] || packages+=(libclang-rt-19-dev-wasm32)
if [[ ${#packages[@]} -gt 0 ]]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
fi

# Runs `cargo install` for crate $1 at version $2 unless $3 --version already prints it.
install_crate() {
  local crate=$1 version=$2 bin=$3; shift 3
  if [[ -x "$tools/bin/$bin" ]] && "$tools/bin/$bin" --version 2>/dev/null | grep -q " $version"; then return; fi
  cargo install --quiet --root "$tools" --locked "$crate" --version "$version" "$@"
}
install_crate wit-bindgen-cli "$WIT_BINDGEN_VERSION" wit-bindgen --no-default-features --features c
install_crate wasm-component-ld "$WASM_COMPONENT_LD_VERSION" wasm-component-ld
