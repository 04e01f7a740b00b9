#!/usr/bin/env bash
# Tests `weir new` as a plugin author meets it: for Rust, Python, JavaScript and C, scaffolds a
# project in a temporary directory outside the checkout, builds it with its own build.sh, and
# runs `weir test` on its fixtures; then starts `weir dev --watch` on it (emulator embedded),
# applies its example parent with kubectl, saves an edit of the reconciler (and of the fixture
# that expects its output) that changes the ConfigMap's data, and waits until the emulator shows
# the new data. Prints each project's size and each language's save-to-cluster seconds (source
# saved -> ConfigMap changed). Exits non-zero if any step fails.
#   guest-sdk/scaffold-test.sh              all four languages
#   guest-sdk/scaffold-test.sh rust python  some of them
# Caches under target/ keep a second run warm: the Rust project builds in target/scaffold (with
# the checkout's Cargo.lock, so it compiles the same dependency versions), the Python one uses
# the SDK installed in target/venv, the JavaScript one links guest-sdk/js, the C one uses the
# checkout's target/tools (guest-sdk/setup.sh).
# The watch step saves once weir dev says it is ready (its start's builds done: for Python and
# JavaScript, the development runtime made; see guest-sdk/python/weir_reconciler/dev.py and
# guest-sdk/js/src/dev.js), and fails when save-to-cluster takes SAVE_LIMIT s or more (default
# 10; the one-minute load average just before the save is printed with it). The watch step also
# fails when the sources it served, built the production way, fail their fixtures under `weir
# test` (weir dev serves a development build compiled with the baseline compiler; weir test
# builds with build.sh alone and compiles with the optimizing one).
# WEIR=path/to/weir uses that binary instead of building target/debug/weir; WATCH_TIMEOUT (s,
# default 300) bounds each wait of the watch step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=watch-message.sh
. "$root/guest-sdk/watch-message.sh"
langs=("$@")
[[ ${#langs[@]} -gt 0 ]] || langs=(rust python js c)
if [[ -z "${WEIR:-}" ]]; then
  cargo build --quiet --manifest-path "$root/Cargo.toml" -p weir --bin weir
  WEIR="$root/target/debug/weir"
fi
"$root/guest-sdk/setup.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/weir-scaffold.XXXXXX")
dev_pid=
stop_dev() { [[ -z "$dev_pid" ]] || { kill -TERM "$dev_pid" 2>/dev/null; wait "$dev_pid" 2>/dev/null; dev_pid=; }; }
trap 'stop_dev; rm -rf "$work"' EXIT
case "$work" in "$root"/*) echo "the temporary directory $work is inside the checkout" >&2; exit 1 ;; esac
status=0
summary=()
timeout=${WATCH_TIMEOUT:-300}
save_limit=${SAVE_LIMIT:-10}

# The load average now, printed with each save's figure (the figures depend on it).
load_now() { cut -d' ' -f1 /proc/loadavg; }

# Replaces the first $2 by $3 in file $1, in place (no temporary file for the watch to see).
replace() {
  local text
  [[ -f "$1" ]] || { echo "no file $1"; return 1; }
  text=$(<"$1")
  [[ "$text" == *"$2"* ]] || { echo "'$2' not in $1"; return 1; }
  printf '%s\n' "${text/"$2"/"$3"}" >"$1"
}

# The reconciler edit per language: the ConfigMap's message gains a "!".
edit_reconciler() {
  case "$1" in
    rust) replace "$2/src/lib.rs" 'parent.spec.message.clone()' 'format!("{}!", parent.spec.message)' ;;
    python) replace "$2/src/hello_python.py" '{"message": message}' '{"message": message + "!"}' ;;
    js) replace "$2/src/hello-js.js" '{ message: spec.message }' "{ message: spec.message + '!' }" ;;
    c) replace "$2/src/hello_c.c" 'weir_write_string(w, weir_string(message));' 'weir_write_stringf(w, "%s!", weir_string(message));' ;;
  esac
}

# Waits (at most $timeout s) until `weir dev`'s output has a line matching $1; fails if it exits.
await_line() {
  local pattern=$1 log=$2 deadline=$((SECONDS + timeout))
  until grep -qs -- "$pattern" "$log"; do  # -s: weir dev may not have opened its log yet
    kill -0 "$dev_pid" 2>/dev/null || { echo "weir dev exited"; return 1; }
    (( SECONDS < deadline )) || { echo "no line matching '$pattern' after $timeout s"; return 1; }
    sleep 0.2
  done
}

# The project's own build.sh, the production way (WEIR_DEV_BUILD unset), with the caches above.
build_production() {
  case "$1" in
    rust) (cd "$2" && env -u WEIR_DEV_BUILD CARGO_TARGET_DIR="$root/target/scaffold" ./build.sh) ;;
    python) (cd "$2" && env -u WEIR_DEV_BUILD WEIR_VENV="$root/target/venv" ./build.sh) ;;
    js | c) (cd "$2" && env -u WEIR_DEV_BUILD ./build.sh) ;;
  esac
}

# `weir dev --watch PROJECT`: an edit of the reconciler reaches the emulator's ConfigMap.
watch_step() {
  local lang=$1 project=$2 log="$work/dev-$lang.log" kc="$work/kubeconfig-$lang" deadline before saved now
  CARGO_TARGET_DIR="$root/target/scaffold" WEIR_VENV="$root/target/venv" \
    "$WEIR" dev --plain --ready-after-ms 100 --watch "$project" --kubeconfig "$kc" >"$log" 2>&1 &
  dev_pid=$!
  # Served, and the start's builds done (the development build prepared): each save is one build.
  await_line 'watch: ready' "$log" || return 1
  k() { kubectl --kubeconfig "$kc" "$@"; }
  deadline=$((SECONDS + timeout))
  until k apply -f "$project/examples/" >/dev/null 2>&1; do  # until the host has installed the CRD
    (( SECONDS < deadline )) || { echo "kubectl apply kept failing"; k apply -f "$project/examples/"; return 1; }
    sleep 0.2
  done
  until before=$(k get configmap hello -o 'jsonpath={.data.message}' 2>/dev/null) && [[ -n "$before" ]]; do
    (( SECONDS < deadline )) || { echo "no ConfigMap hello after $timeout s"; return 1; }
    sleep 0.2
  done
  # The fixture's expectation first, then the reconciler: one burst of saves, one build.
  replace "$project/fixtures/01-new-object-gets-its-config-map.yaml" \
    "      data:"$'\n'"        message: $before" "      data:"$'\n'"        message: $before!" || return 1
  load=$(load_now)
  edit_reconciler "$lang" "$project" || return 1
  saved=$(date +%s.%N)
  if ! watch_message "$kc" "$before!" "$timeout"; then
    kill -0 "$dev_pid" 2>/dev/null || { echo "weir dev exited"; return 1; }
    echo "the ConfigMap kept '$before' $timeout s after the save"
    return 1
  fi
  now=$(date +%s.%N)
  save_to_cluster=$(awk -v a="$saved" -v b="$now" 'BEGIN { printf "%.1f", b - a }')
  echo "== $lang: save to cluster ${save_to_cluster} s, limit $save_limit s, load $load (ConfigMap hello: '$before' -> '$before!')"
  stop_dev
  # weir dev served a development build compiled with the baseline compiler; the same sources
  # built the production way (build.sh without WEIR_DEV_BUILD) must pass under weir test's
  # optimizing compiler too.
  build_production "$lang" "$project" || { echo "the production build of the sources weir dev served failed"; return 1; }
  "$WEIR" test "$project/hello-$lang.wasm" "$project/fixtures" \
    || { echo "the sources weir dev served fail their fixtures built the production way"; return 1; }
}

for lang in "${langs[@]}"; do
  start=$(date +%s)
  project="$work/hello-$lang"
  echo "== weir new --lang $lang hello-$lang"
  "$WEIR" new --lang "$lang" "hello-$lang" --group demo.example.dev --output "$project" --sdk "$root/guest-sdk"
  files=$(find "$project" -type f | wc -l)
  lines=$(find "$project" -type f -exec cat {} + | wc -l)
  [[ "$lang" == rust ]] && cp "$root/Cargo.lock" "$project/Cargo.lock"
  build_production "$lang" "$project" || { echo "FAILED: building the $lang scaffold"; status=1; continue; }
  "$WEIR" test "$project/hello-$lang.wasm" "$project/fixtures" || { echo "FAILED: weir test on the $lang scaffold"; status=1; continue; }
  tested=$(date +%s)
  save_to_cluster= load=
  if ! watch_step "$lang" "$project"; then
    echo "FAILED: weir dev --watch on the $lang scaffold; its output:"
    tail -n 40 "$work/dev-$lang.log"
    stop_dev
    status=1
  elif awk -v s="$save_to_cluster" -v limit="$save_limit" 'BEGIN { exit !(s >= limit) }'; then
    echo "FAILED: the $lang scaffold's save to cluster took ${save_to_cluster} s, not under $save_limit s (load $load)"
    status=1
  fi
  end=$(date +%s)
  summary+=("$(printf '%-7s %3s files %5s lines   new+build+test %4s s   watch step %4s s   save to cluster %5s s' \
    "$lang" "$files" "$lines" $((tested - start)) $((end - tested)) "${save_to_cluster:-FAILED}")")
done
echo "== scaffolded projects"
printf '%s\n' "${summary[@]}"
exit "$status"
