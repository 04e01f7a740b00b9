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

# `weir test` and the end-to-end harness share one compiled-plugin cache, so a
# component is compiled once per run, not once per step.
export WEIR_CACHE_DIR="$root/target/plugin-cache"

step "the Python and JavaScript Kubernetes clients and the current kubectl the emulator's conformance tests drive"
host/emulator/tests/clients/setup.sh

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

step "the tests in three lanes at once: end-to-end; the other Rust tests, then weir new's scaffolds; every plugin's fixtures and the guest SDKs' native tests"
# Each lane is tests/lane.sh (what it runs, and why the test executables run without cargo),
# in its own process group, its output in target/lanes/NAME.log, printed as each lane ends.
lanes_dir="$root/target/lanes"
rm -rf "$lanes_dir"
mkdir -p "$lanes_dir"
# The test executables the build above made (nothing is compiled again: the same selection),
# one per line: package directory, test target, executable, tab-separated.
executables="$lanes_dir/executables"
cargo test --workspace --no-run --message-format=json 2>"$lanes_dir/list.err" | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(os.path.dirname(m["manifest_path"]), m["target"]["name"], m["executable"], sep="\t")
' >"$executables" || { cat "$lanes_dir/list.err" >&2; exit 1; }
declare -A lane_of=()
lane_pids=()
stop_lanes() { local pid; for pid in "${lane_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done; }
trap 'stop_lanes; step_table' EXIT
lanes_started=$(date +%s)
for name in e2e rust guests; do
  setsid tests/lane.sh "$name" "$executables" >"$lanes_dir/$name.log" 2>&1 </dev/null &
  lane_of[$!]=$name
  lane_pids+=("$!")
done
running=("${lane_pids[@]}")
failed_lanes=()
lane_times=""
while ((${#running[@]} > 0)); do
  lane_status=0
  wait -n -p ended_pid "${running[@]}" || lane_status=$?
  name=${lane_of[$ended_pid]}
  took=$(($(date +%s) - lanes_started))
  printf '\n==> lane %s ended after %ds (exit status %d); its output (target/lanes/%s.log):\n' \
    "$name" "$took" "$lane_status" "$name"
  cat "$lanes_dir/$name.log"
  lane_times+=$(printf '\n%6ds    lane %s' "$took" "$name")
  ((lane_status == 0)) || failed_lanes+=("$name")
  still=()
  for pid in "${running[@]}"; do [[ $pid == "$ended_pid" ]] || still+=("$pid"); done
  running=("${still[@]}")
done
trap step_table EXIT
step_note=${lane_times#$'\n'}
# One closing line for the Rust tests (the deploy test, the end-to-end and the other lanes'
# executables, the doc tests): cargo's own per-executable lines are spread over the lanes' logs.
cat "$lanes_dir/e2e.log" "$lanes_dir/rust.log" >>"$log"
awk '/^test result:/ { passed += $4; failed += $6 }
     END { printf "Rust tests: %d passed, %d failed\n", passed, failed }' "$log"
if ((${#failed_lanes[@]} > 0)); then
  echo "failed: the lane(s) ${failed_lanes[*]} (their output is above, and in target/lanes/)" >&2
  exit 1
fi
