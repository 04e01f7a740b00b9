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
  # Blog "v2" for the host's hot-swap test (same plugin plus one label on every child), built
  # first so that target/wasm32-wasip2 ends up holding the normal Blog.
  cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin -p weir-plugin-blog --features hotswap-label
  cp "$root/target/wasm32-wasip2/plugin/weir_plugin_blog.wasm" "$out/blog-v2.wasm"
  local args=()
  for c in "${!crates[@]}"; do args+=(-p "$c"); done
  cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin "${args[@]}"
  for c in "${!crates[@]}"; do
    cp "$root/target/wasm32-wasip2/plugin/${c//-/_}.wasm" "$out/${crates[$c]}.wasm"
  done
}

# Python and JavaScript plugins: toolchains from guest-sdk/setup.sh (pinned, idempotent).
build_guests() {
  "$root/guest-sdk/setup.sh"
  # The Blog CRD generated from the Rust type; embedded so `describe` reports it as the Rust plugin's does.
  local crd=() start
  if [[ -f "$root/deploy/crd/blog.yaml" ]]; then
    crd=(--crd "$root/deploy/crd/blog.yaml")
  else
    echo "warning: deploy/crd/blog.yaml is missing; blog-py and blog-js will ship no CRD" >&2
  fi
  start=$(date +%s%N)
  PYTHONPATH="$root/guest-sdk/python" "$root/target/venv/bin/python" -m weir_reconciler.build \
    blog:Blog --path "$root/plugins/blog-py" "${crd[@]}" -o "$out/blog-py.wasm"
  echo "blog-py.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  start=$(date +%s%N)
  node "$root/guest-sdk/js/bin/componentize.js" "$root/plugins/blog-js/src/blog.js" "${crd[@]}" -o "$out/blog-js.wasm"
  echo "blog-js.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
}

build_rust
case "${1:-rust}" in
  rust) ;;
  all) build_guests ;;
  *) echo "usage: plugins/build.sh [rust|all]" >&2; exit 2 ;;
esac
ls -l "$out"
