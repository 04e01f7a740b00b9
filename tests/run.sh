#!/usr/bin/env bash
# The README's test command: sets up what the tests need, builds every plugin,
# and runs all the tests (Rust unit, sandbox, fixtures, end-to-end, guest SDKs).
#   tests/run.sh
# With KUBECONFIG set, the end-to-end tests run against that cluster instead of
# the embedded emulator.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Each step's wall time, kept for the table printed at exit (where a first run's minutes go).
started=$(date +%s)
step_started=$started
step_name=""
step_times=()
# A line shown under the current step's in the table (a job that ran in the background during it).
step_note=""
step() {
  local now
  now=$(date +%s)
  [[ -z $step_name ]] || step_times+=("$(printf '%6ds  %s' "$((now - step_started))" "$step_name")")
  [[ -z $step_note ]] || step_times+=("$step_note")
  step_note=""
  step_started=$now
  step_name="$*"
  printf '\n==> %s  (at %ds)\n' "$*" "$((now - started))"
}
step_table() {
  local now
  now=$(date +%s)
  [[ -z $step_name ]] || step_times+=("$(printf '%6ds  %s' "$((now - step_started))" "$step_name")")
  [[ -z $step_note ]] || step_times+=("$step_note")
  printf '\n==> wall time per step (%ds in all)\n' "$((now - started))"
  printf '%s\n' "${step_times[@]}"
}
trap step_table EXIT

step "toolchain: wasm32-wasip2 target"
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

step "the production build (--no-default-features) leaves out the emulator"
tree=$(cargo tree -p weir --no-default-features -e normal --prefix none)
if grep -q '^weir-emulator ' <<<"$tree"; then
  echo "weir-emulator is a normal dependency of weir without the \`dev\` feature" >&2
  exit 1
fi

step "no deprecated YAML crate anywhere in the workspace (serde_yaml is unmaintained)"
tree=$(cargo tree --workspace --target all -e normal,dev,build --prefix none)
if grep -Eq '^(serde_yaml|serde_yml|unsafe-libyaml) ' <<<"$tree"; then
  echo "a deprecated YAML crate is back in the dependency tree:" >&2
  grep -E '^(serde_yaml|serde_yml|unsafe-libyaml) ' <<<"$tree" | sort -u >&2
  cargo tree --workspace -e normal,dev,build -i serde_yaml >&2 || true
  exit 1
fi

step "one feature resolution: the README's main command compiles no crate the test build does not"
# `cargo run -p weir` resolves features for the host alone, `cargo test --workspace` for every
# member with its dev-dependencies; a crate resolved apart (kube, wasmparser...) is compiled twice,
# with everything above it (wasmtime). The host turns on what the tests turn on (host/Cargo.toml).
main_tree=$(cargo tree -p weir -e normal,build -f '{p} [{f}]' --prefix none | sed 's/ (\*)$//' | sort -u)
test_tree=$(cargo tree --workspace -e normal,build,dev -f '{p} [{f}]' --prefix none | sed 's/ (\*)$//' | sort -u)
apart=$(comm -23 <(echo "$main_tree") <(echo "$test_tree"))
if [[ -n "$apart" ]]; then
  echo "\`cargo run -p weir\` builds these crates with features the test build does not give them:" >&2
  echo "$apart" >&2
  echo "turn the test build's features on in host/Cargo.toml too (see its note on semver, wasmparser...)" >&2
  exit 1
fi

step "kubectl (the end-to-end and emulator tests drive the real one)"
if ! command -v kubectl >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq kubernetes-client
fi

step "build every plugin (Rust, Python, JavaScript, C) in the background, and the workspace's tests once (and with them target/debug/weir)"
# The plugin build has long single-threaded stretches (each plugin's LTO link, componentize-py,
# componentize-js, the downloads of the Python and npm tools), which the test build's parallel
# compiles fill; neither needs the other's output, and cargo locks target/debug apart from the
# plugins' target/plugin and target/wasm32-wasip2. Its output goes to target/plugins-build.log,
# printed when it is done. Its own process group, so that a failed test build stops it whole.
plugins_log="$root/target/plugins-build.log"
mkdir -p "$root/target"
plugins_started=$(date +%s)
setsid bash -c 'plugins/build.sh all; echo "$? $(date +%s)" >"$0.status"' "$plugins_log" >"$plugins_log" 2>&1 </dev/null &
plugins_pid=$!
stop_plugins() { kill -- "-$plugins_pid" 2>/dev/null || true; }
trap 'stop_plugins; step_table' EXIT
# The same tree as the README's `cargo run -p weir` (checked above), so a newcomer who ran the main
# command first compiles only the tests here.
cargo test --workspace --no-run
if kill -0 "$plugins_pid" 2>/dev/null; then
  echo "the tests are built; waiting for the plugins' build (target/plugins-build.log)"
fi
wait "$plugins_pid" || true
trap step_table EXIT
read -r plugins_status plugins_ended <"$plugins_log.status" || plugins_status=none
rm -f "$plugins_log.status"
cat "$plugins_log"
[[ $plugins_status == none ]] \
  || step_note=$(printf '%6ds    of which the plugins (in the background)' "$((plugins_ended - plugins_started))")
if [[ $plugins_status != 0 ]]; then
  echo "building the plugins failed (exit status $plugins_status; its output is above)" >&2
  exit 1
fi

step "the benchmark's Blog copies: the Blog's CRD text under each copy's names"
WEIR_BLOG_COPY=3 cargo test -p weir-plugin-blog --features bench-copy --lib copy

# `weir test` and the end-to-end harness share one compiled-plugin cache, so a
# component is compiled once per run, not once per step.
export WEIR_CACHE_DIR="$root/target/plugin-cache"

step "Blog fixtures against every language's component"
for p in blog blog-py blog-js blog-c; do
  target/debug/weir test "target/plugins/$p.wasm" plugins/blog/fixtures
done

step "the Spread's fixtures: one parent's workload placed in several clusters (contract 0.4.0)"
target/debug/weir test target/plugins/spread.wasm plugins/spread/fixtures

step "the Metacontroller-style examples' fixtures (Python hooks, async JavaScript hooks)"
target/debug/weir test target/plugins/metacontroller-example.wasm plugins/metacontroller-example/fixtures
# The same fixtures through async JavaScript hooks (each hook's Promise awaited in the component).
target/debug/weir test target/plugins/metacontroller-example-js.wasm plugins/metacontroller-example/fixtures
# An async finalize hook that scales its Deployment to zero before letting go (contract 0.3.0).
target/debug/weir test target/plugins/metacontroller-scale-down-js.wasm plugins/metacontroller-scale-down-js/fixtures
# A v2 hook reading a Secret in another namespace: offline, without a policy entry (no data, refused elsewhere).
target/debug/weir test target/plugins/metacontroller-secret-import-js.wasm plugins/metacontroller-secret-import-js/fixtures

step "guest SDK native tests (Python, JavaScript, C)"
guest-sdk/test.sh

step "the Python and JavaScript Kubernetes clients and the current kubectl the emulator's conformance tests drive"
host/emulator/tests/clients/setup.sh

step "weir new: each language scaffolded outside the checkout, built, weir test"
WEIR="$root/target/debug/weir" guest-sdk/scaffold-test.sh

step "an OCI registry (CNCF Distribution), tmux, openssl and sigstore-js for the tests that drive them"
tests/setup-registry.sh
command -v tmux >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq tmux; }
# The signature tests check what Weir signs with other implementations: the openssl command, and
# sigstore-js (npm, pinned; target/sigstore-js), which also signs a bundle for Weir to verify.
command -v openssl >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq openssl; }
host/src/trust/testdata/sigstore-js/setup.sh

step "the host image (deploy/Dockerfile's prebuilt stage around target/debug/weir), with podman"
tests/setup-podman.sh
SECONDS=0
tests/image.sh target/debug/weir localhost/weir:test
echo "image step: ${SECONDS}s"

step "the deploy test: deploy/ on a secure emulator, the image as its pod, plugins delivered each documented way, every rule needed"
# Run apart with its output shown (the image size, one line per removed rule, "N of N rules
# needed"); the workspace run below skips it.
log="$root/target/cargo-test.log"
SECONDS=0
# --workspace: the same feature resolution as the other builds (a bare -p weir compiles wasmtime again).
cargo test --workspace --test integration -- deploy_image --nocapture 2>&1 | tee "$log"
echo "deploy test: ${SECONDS}s"

step "cargo test (unit, sandbox, emulator, end-to-end)"
cargo test --workspace --no-fail-fast -- --skip deploy_image 2>&1 | tee -a "$log"
# One closing line for the whole run: cargo's own last line is the last
# crate's doc tests, which is often "0 passed".
awk '/^test result:/ { passed += $4; failed += $6 }
     END { printf "cargo test: %d passed, %d failed\n", passed, failed }' "$log"
