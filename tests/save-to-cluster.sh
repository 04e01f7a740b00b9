#!/usr/bin/env bash
# Measures save-to-cluster with `weir dev --watch`: a source file of a `weir new` project saved
# -> the ConfigMap its Greeting owns shows the new data on the emulator. SAVES saves (default 5)
# per language; prints the median of each column, then every run.
#   tests/save-to-cluster.sh              Rust, Python and JavaScript
#   tests/save-to-cluster.sh rust         some of them
# For each language: scaffolds a project outside the checkout, starts `weir dev --watch PROJECT
# --apply PROJECT/examples` (the first build is not timed), waits for the ConfigMap, then, SAVES
# times, saves an edit of the reconciler (the message gets one more "!") with the matching fixture
# edit, and watches the ConfigMap (one kubectl --watch) until it holds the new message. Columns, from
# `weir dev`'s own lines: build (build.sh), check (the component compiled and its fixtures run;
# split into compile and fixtures when `weir dev` logs them), swap (from the check's end to the
# ConfigMap seen: the copy, the hot load, the reconcile, the apply and the watch event), total
# (saved -> seen, which also holds the 150 ms quiet time before a build); load is the machine's
# one-minute load average after the language's last save (the figures depend on it).
# Warm caches as guest-sdk/scaffold-test.sh uses them (target/scaffold, target/venv,
# guest-sdk/js): run that once first. WEIR=path/to/weir uses that binary instead of target/debug/weir.
# Saves start once `weir dev` says it is ready (its first build done; for Python that makes the
# development runtime each later save writes its sources into). DEV_BUILD=0 makes each save a
# production build instead (build.sh runs without WEIR_DEV_BUILD): the figure before them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../guest-sdk/watch-message.sh
. "$root/guest-sdk/watch-message.sh"
langs=("$@")
[[ ${#langs[@]} -gt 0 ]] || langs=(rust python js)
if [[ -z "${WEIR:-}" ]]; then
  cargo build --quiet --manifest-path "$root/Cargo.toml" -p weir --bin weir
  WEIR="$root/target/debug/weir"
fi
"$root/guest-sdk/setup.sh" >/dev/null
saves=${SAVES:-5}

work=$(mktemp -d "${TMPDIR:-/tmp}/weir-save.XXXXXX")
dev_pid=
cleanup() { [[ -n "$dev_pid" ]] && kill "$dev_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

now() { date +%s.%N; }
message() { kubectl --kubeconfig "$1" get configmap hello -o 'jsonpath={.data.message}' 2>/dev/null || true; }
# Waits (polling every 50 ms, at most $3 s) until the ConfigMap holds $2.
wait_message() {
  local deadline=$(( $(date +%s) + $3 ))
  until [[ "$(message "$1")" == "$2" ]]; do
    (( $(date +%s) < deadline )) || { echo "timed out waiting for message '$2'" >&2; return 1; }
    sleep 0.05
  done
}
# The median of the numbers given (blank when there are none).
median() {
  printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# Saves edit number $1 (1, 2, ...): the fixture's expected message and the reconciler's output
# both get their $1-th "!". The fixture first (it is a source too: both saves make one build).
save_edit() {
  python3 - "$project/fixtures/01-new-object-gets-its-config-map.yaml" "$source" "$from" "$to" "$again" "$1" <<'EOF'
import sys
fixture, source, old, new, again, n = sys.argv[1:]
n = int(n)
text = open(fixture).read()
before, after = "Hello from Greeting" + "!" * (n - 1), "Hello from Greeting" + "!" * n
text = text.replace(f"      data:\n        message: {before}\n", f"      data:\n        message: {after}\n")
open(fixture, "w").write(text)
code = open(source).read()
if n > 1:
    old, new = again, again + "!"
assert old in code, (old, source)
open(source, "w").write(code.replace(old, new, 1))
EOF
}

rows=()
runs=()
for lang in "${langs[@]}"; do
  project="$work/hello-$lang"
  kubeconfig="$work/kubeconfig-$lang"
  log="$work/dev-$lang.log"
  "$WEIR" new --lang "$lang" "hello-$lang" --kind Greeting --group demo.example.dev \
    --output "$project" --sdk "$root/guest-sdk" >/dev/null
  # $from -> $to is the first edit; each later one adds a "!" after $again.
  case "$lang" in
    rust) cp "$root/Cargo.lock" "$project/Cargo.lock"; export CARGO_TARGET_DIR="$root/target/scaffold"
          source="$project/src/lib.rs"; from='parent.spec.message.clone()'; to='format!("{}!", parent.spec.message)'
          again='format!("{}' ;;
    python) export WEIR_VENV="$root/target/venv"
          source="$project/src/hello_python.py"
          from='{"message": message}'; to='{"message": message + "!"}'; again='message + "' ;;
    js) source="$project/src/hello-js.js"; from='{ message: spec.message }'; to="{ message: spec.message + '!' }"
        again="spec.message + '" ;;
  esac
  # DEV_BUILD=0: build the production way on every save (the figure before development builds).
  [[ "${DEV_BUILD:-1}" == 0 ]] && sed -i 's/^set -euo pipefail$/&\nunset WEIR_DEV_BUILD/' "$project/build.sh"
  # weir dev's watch logs each check's compile and fixture seconds at info.
  WEIR_LOG=warn,weir::dev::watch=info WEIR_CACHE_DIR="$root/target/plugin-cache" "$WEIR" dev --watch "$project" --apply "$project/examples" \
    --plain --kubeconfig "$kubeconfig" --ready-after-ms 100 >"$log" 2>&1 &
  dev_pid=$!
  wait_message "$kubeconfig" "Hello from Greeting" 900 || { cat "$log"; exit 1; }
  until grep -q 'watch: ready' "$log"; do sleep 0.2; done
  builds=() checks=() compiles=() fixtures=() swaps=() totals=()
  for n in $(seq 1 "$saves"); do
    sleep 1
    lines=$(wc -l <"$log")
    save_edit "$n"
    saved=$(now)
    want="Hello from Greeting$(printf '!%.0s' $(seq 1 "$n"))"
    watch_message "$kubeconfig" "$want" 300 || { echo "timed out waiting for message '$want'" >&2; cat "$log"; exit 1; }
    seen=$(now)
    sleep 0.5 # the rest of this cycle's lines
    cycle=$(tail -n +"$((lines + 1))" "$log" | sed 's/\x1b\[[0-9;]*m//g') # without the log's colours
    build=$(grep -o 'built [^ ]* in [0-9.]* s' <<<"$cycle" | tail -1 | awk '{print $4}')
    served=$(grep -o 'serving the new build ([0-9.]* s' <<<"$cycle" | tail -1 | grep -o '[0-9.]* s$' | awk '{print $1}')
    compile=$(grep -o 'compile_s=[0-9.]*' <<<"$cycle" | tail -1 | cut -d= -f2 || true)
    fixture=$(grep -o 'fixtures_s=[0-9.]*' <<<"$cycle" | tail -1 | cut -d= -f2 || true)
    total=$(echo "$seen - $saved" | bc)
    # weir dev counts from the build's start (after the quiet time): the check is what follows the build.
    check=$(awk -v s="$served" -v b="$build" 'BEGIN { printf "%.2f", s - b }')
    swap=$(awk -v t="$total" -v s="$served" 'BEGIN { printf "%.2f", t - s }')
    [[ -n "$compile" ]] && compile=$(printf '%.2f' "$compile")
    [[ -n "$fixture" ]] && fixture=$(printf '%.2f' "$fixture")
    builds+=("$build") checks+=("$check") compiles+=("$compile") fixtures+=("$fixture") swaps+=("$swap") totals+=("$total")
    runs+=("$(printf '| %-8s | %d | %6s | %6s | %8s | %8s | %6s | %6.2f |' \
      "$lang" "$n" "$build" "$check" "$compile" "$fixture" "$swap" "$total")")
  done
  kill "$dev_pid"; wait "$dev_pid" 2>/dev/null || true; dev_pid=
  rows+=("$(printf '| %-8s | %6s | %6s | %8s | %8s | %6s | %6s | %4s |' "$lang" "$(median "${builds[@]}")" \
    "$(median "${checks[@]}")" "$(median "${compiles[@]}")" "$(median "${fixtures[@]}")" \
    "$(median "${swaps[@]}")" "$(median "${totals[@]}")" "$(cut -d' ' -f1 /proc/loadavg)")")
done

echo "save-to-cluster (s), median of $saves saves each, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg):"
echo
echo "| language | build  | check  | compile  | fixtures | swap   | total  | load |"
echo "|----------|--------|--------|----------|----------|--------|--------|------|"
printf '%s\n' "${rows[@]}"
echo
echo "| language | n | build  | check  | compile  | fixtures | swap   | total  |"
echo "|----------|---|--------|--------|----------|----------|--------|--------|"
printf '%s\n' "${runs[@]}"
