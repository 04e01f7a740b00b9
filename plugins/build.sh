#!/usr/bin/env bash
# Builds every plugin component into target/plugins/<name>.wasm.
#   plugins/build.sh            Rust plugins (the Blog plugin and the test plugins)
#   plugins/build.sh all        also the Python and JavaScript plugins
# Idempotent: installs the wasm32-wasip2 target if it is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/target/plugins"
mkdir -p "$out"

build_rust() {
  rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
  # crate name -> component file name
  local -A crates=(
    [weir-plugin-blog]=blog
    [weir-plugin-chaos]=chaos
    [weir-plugin-scenario]=scenario
  )
  local args=()
  for c in "${!crates[@]}"; do args+=(-p "$c"); done
  cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin "${args[@]}"
  for c in "${!crates[@]}"; do
    cp "$root/target/wasm32-wasip2/plugin/${c//-/_}.wasm" "$out/${crates[$c]}.wasm"
  done
}

build_rust
case "${1:-rust}" in
  rust) ;;
  all) ;; # Python and JavaScript plugins are added here by their SDKs.
  *) echo "usage: plugins/build.sh [rust|all]" >&2; exit 2 ;;
esac
ls -l "$out"
