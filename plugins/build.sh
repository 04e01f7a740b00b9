#!/usr/bin/env bash
# Builds plugin components into target/plugins/<name>.wasm.
#   plugins/build.sh blog       the Blog plugin alone
#   plugins/build.sh blog-and-host
#                               the Blog plugin and, beside it, the host (`cargo build -p weir --bin
#                               weir`, the build the README's `cargo run -p weir` then finds done):
#                               what the README's main command runs first
#   plugins/build.sh            Rust plugins (the Blog and Spread plugins and the test plugins)
#   plugins/build.sh all        also the Python, JavaScript and C plugins (the Blog ports, the Metacontroller examples)
#   plugins/build.sh ten        also the Blog under ten kinds Blog0..Blog9, for the benchmark's
#                               ten-plugin row: target/plugins/copies/blog{0..9}.wasm
#   plugins/build.sh fifty      ... and under fifty kinds (Blog0..Blog49), its fifty-plugin row
# Idempotent: installs the wasm32-wasip2 target if it is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/target/plugins"
mkdir -p "$out"

wasm_target() {
  rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
}

# The Blog alone: one crate for the wasm target, no test plugin and no variant.
build_blog() {
  wasm_target
  cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin -p weir-plugin-blog
  cp "$root/target/wasm32-wasip2/plugin/weir_plugin_blog.wasm" "$out/blog.wasm"
}

# The Blog's WebAssembly build in the background (its output in target/plugins/blog-build.log)
# while the host compiles in the foreground with cargo's progress bar: the host's build has long
# stretches where one crate compiles alone (Cranelift's code generator, the `weir` crate, the
# link), and the Blog's build fills the other core meanwhile. Neither waits on the other's lock:
# cargo locks each profile's directory (target/debug, target/plugin), not the whole target.
build_blog_and_host() {
  local log="$out/blog-build.log"
  (
    wasm_target
    exec cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin -p weir-plugin-blog
  ) >"$log" 2>&1 &
  blog_pid=$!
  # A failed host build or Ctrl-C stops the Blog's build too (a global: the trap may run after
  # the function has returned).
  trap 'kill "$blog_pid" 2>/dev/null || true' EXIT
  echo "building the Blog plugin beside the host (its output: ${log#"$root"/})"
  cargo build --manifest-path "$root/Cargo.toml" -p weir --bin weir
  if kill -0 "$blog_pid" 2>/dev/null; then
    echo "the host is built; waiting for the Blog plugin's build"
  fi
  if ! wait "$blog_pid"; then
    trap - EXIT
    echo "the Blog plugin's build failed (${log#"$root"/}):" >&2
    tail -n 30 "$log" >&2
    return 1
  fi
  trap - EXIT
  cp "$root/target/wasm32-wasip2/plugin/weir_plugin_blog.wasm" "$out/blog.wasm"
  echo "the Blog plugin is built"
}

build_rust() {
  wasm_target
  # crate name -> component file name
  local -A crates=(
    [weir-plugin-blog]=blog
    [weir-plugin-spread]=spread
    [weir-plugin-chaos]=chaos
    [weir-plugin-scenario]=scenario
    [weir-plugin-hostile]=hostile
    [weir-plugin-related]=related
  )
  # Blog "v2" for the host's hot-swap test (same plugin plus one label on every child), built
  # first so that target/wasm32-wasip2 ends up holding the normal Blog.
  cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin -p weir-plugin-blog --features hotswap-label
  cp "$root/target/wasm32-wasip2/plugin/weir_plugin_blog.wasm" "$out/blog-v2.wasm"
  # The scenario plugin failing on a tenth of its parents: the candidate the rollout tests roll back.
  cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin -p weir-plugin-scenario --features canary-fail
  cp "$root/target/wasm32-wasip2/plugin/weir_plugin_scenario.wasm" "$out/scenario-canary-fail.wasm"
  # The scenario plugin built against the released contract 0.2.0: its finalize must work as before.
  cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin -p weir-plugin-scenario --features contract-0-2
  cp "$root/target/wasm32-wasip2/plugin/weir_plugin_scenario.wasm" "$out/scenario-0.2.0.wasm"
  # The hostile plugin's variants whose attack is their describe() (tests/e2e/hostile.rs), each
  # its own component; built before the plain hostile plugin for the same reason.
  local variant
  for variant in parent-secret claims wildcard crd-other unserved; do
    cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin -p weir-plugin-hostile --features "$variant"
    cp "$root/target/wasm32-wasip2/plugin/weir_plugin_hostile.wasm" "$out/hostile-$variant.wasm"
  done
  local args=()
  for c in "${!crates[@]}"; do args+=(-p "$c"); done
  cargo build --manifest-path "$root/Cargo.toml" --target wasm32-wasip2 --profile plugin "${args[@]}"
  for c in "${!crates[@]}"; do
    cp "$root/target/wasm32-wasip2/plugin/${c//-/_}.wasm" "$out/${crates[$c]}.wasm"
  done
}

# Python, JavaScript and C plugins: toolchains from guest-sdk/setup.sh (pinned, idempotent).
build_guests() {
  "$root/guest-sdk/setup.sh"
  # The Blog CRD generated from the Rust type; embedded so `describe` reports it as the Rust plugin's does.
  local crd=() start
  if [[ -f "$root/deploy/crd/blog.yaml" ]]; then
    crd=(--crd "$root/deploy/crd/blog.yaml")
  else
    echo "warning: deploy/crd/blog.yaml is missing; blog-py, blog-js and blog-c will ship no CRD" >&2
  fi
  start=$(date +%s%N)
  "$root/target/venv/bin/weir-py" build blog:Blog --path "$root/plugins/blog-py" "${crd[@]}" -o "$out/blog-py.wasm"
  echo "blog-py.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  start=$(date +%s%N)
  node "$root/guest-sdk/js/bin/componentize.js" build "$root/plugins/blog-js/src/blog.js" "${crd[@]}" -o "$out/blog-js.wasm"
  echo "blog-js.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  start=$(date +%s%N)
  "$root/guest-sdk/c/bin/weir-c" build "$root/plugins/blog-c/blog.c" "${crd[@]}" -o "$out/blog-c.wasm"
  echo "blog-c.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  # A Metacontroller CompositeController's hooks, unchanged, as a Weir plugin (issue 12, the adapter).
  start=$(date +%s%N)
  local example="$root/plugins/metacontroller-example"
  "$root/target/venv/bin/weir-py" build plugin:ConfigBundle --path "$example" --crd "$example/crd.yaml" -o "$out/metacontroller-example.wasm"
  echo "metacontroller-example.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  # A cluster-scoped parent propagating a ConfigMap, v1 hooks keyed `namespace/name` (issue 24: scope
  # widened by the policy; issue 50: keyed as Metacontroller keys them).
  start=$(date +%s%N)
  local propagation="$root/plugins/metacontroller-propagation"
  "$root/target/venv/bin/weir-py" build plugin:ConfigPropagation --path "$propagation" --crd "$propagation/crd.yaml" -o "$out/metacontroller-propagation.wasm"
  echo "metacontroller-propagation.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  # The same controller from async JavaScript hooks: the adapter awaits each hook's Promise.
  start=$(date +%s%N)
  node "$root/guest-sdk/js/bin/componentize.js" build "$root/plugins/metacontroller-example-js/plugin.js" \
    --crd "$example/crd.yaml" -o "$out/metacontroller-example-js.wasm"
  echo "metacontroller-example-js.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  # A CompositeController whose async finalize hook scales its Deployment to zero before letting go.
  start=$(date +%s%N)
  local scale_down="$root/plugins/metacontroller-scale-down-js"
  node "$root/guest-sdk/js/bin/componentize.js" build "$scale_down/plugin.js" \
    --crd "$scale_down/crd.yaml" -o "$out/metacontroller-scale-down-js.wasm"
  echo "metacontroller-scale-down-js.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  # A namespaced parent whose v2 hooks read a Secret in another namespace (issue 24: the policy's
  # `namespaces` and `secretData`).
  start=$(date +%s%N)
  local secret_import="$root/plugins/metacontroller-secret-import-js"
  node "$root/guest-sdk/js/bin/componentize.js" build "$secret_import/plugin.js" \
    --crd "$secret_import/crd.yaml" -o "$out/metacontroller-secret-import-js.wasm"
  echo "metacontroller-secret-import-js.wasm built in $(( ($(date +%s%N) - start) / 1000000 )) ms"
}

# N distinct components: the Blog built with `bench-copy` and WEIR_BLOG_COPY=0..N-1, in a target
# directory of their own so they never replace the normal Blog's build output. Only the Blog crate
# is recompiled from one copy to the next (cargo tracks the variable).
build_copies() {
  mkdir -p "$out/copies"
  local n
  for ((n = 0; n < $1; n++)); do
    WEIR_BLOG_COPY=$n CARGO_TARGET_DIR="$root/target/copies" cargo build --manifest-path "$root/Cargo.toml" \
      --target wasm32-wasip2 --profile plugin -p weir-plugin-blog --features bench-copy
    cp "$root/target/copies/wasm32-wasip2/plugin/weir_plugin_blog.wasm" "$out/copies/blog$n.wasm"
  done
  ls -l "$out/copies"
}

case "${1:-rust}" in
  blog) build_blog ;;
  blog-and-host) build_blog_and_host ;;
  rust) build_rust ;;
  all) build_rust; build_guests ;;
  ten) build_rust; build_copies 10 ;;
  fifty) build_rust; build_copies 50 ;;
  *) echo "usage: plugins/build.sh [blog|blog-and-host|rust|all|ten|fifty]" >&2; exit 2 ;;
esac
ls -l "$out"
