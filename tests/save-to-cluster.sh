#!/usr/bin/env bash
# Measures save-to-cluster with `weir dev --watch`: a source file of a `weir new` project saved
# -> the ConfigMap its Greeting owns shows the new data on the emulator. One run per language.
#   tests/save-to-cluster.sh              Rust, Python and JavaScript
#   tests/save-to-cluster.sh rust         some of them
# For each language: scaffolds a project outside the checkout, starts `weir dev --watch PROJECT
# --apply PROJECT/examples` (the first build is not timed), waits for the ConfigMap, then saves an
# edit of the reconciler (the message gets a "!") with the matching fixture edit, and polls kubectl
# every 50 ms until the ConfigMap holds the new message. Warm caches as guest-sdk/scaffold-test.sh
# uses them (target/scaffold, target/venv, guest-sdk/js): run that once first.
# WEIR=path/to/weir uses that binary instead of target/debug/weir.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
langs=("$@")
[[ ${#langs[@]} -gt 0 ]] || langs=(rust python js)
if [[ -z "${WEIR:-}" ]]; then
  cargo build --quiet --manifest-path "$root/Cargo.toml" -p weir --bin weir
  WEIR="$root/target/debug/weir"
fi
"$root/guest-sdk/setup.sh" >/dev/null

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

rows=()
for lang in "${langs[@]}"; do
  project="$work/hello-$lang"
  kubeconfig="$work/kubeconfig-$lang"
  "$WEIR" new --lang "$lang" "hello-$lang" --kind Greeting --group demo.example.dev \
    --output "$project" --sdk "$root/guest-sdk" >/dev/null
  case "$lang" in
    rust) cp "$root/Cargo.lock" "$project/Cargo.lock"; export CARGO_TARGET_DIR="$root/target/scaffold"
          source="$project/src/lib.rs"; from='parent.spec.message.clone()'; to='format!("{}!", parent.spec.message)' ;;
    python) export WEIR_VENV="$root/target/venv"
          source="$project/src/hello_python.py"
          from='{"message": message}'; to='{"message": message + "!"}' ;;
    js) source="$project/src/hello-js.js"; from='{ message: spec.message }'; to="{ message: spec.message + '!' }" ;;
  esac
  WEIR_CACHE_DIR="$root/target/plugin-cache" "$WEIR" dev --watch "$project" --apply "$project/examples" \
    --plain --kubeconfig "$kubeconfig" --ready-after-ms 100 >"$work/dev-$lang.log" 2>&1 &
  dev_pid=$!
  wait_message "$kubeconfig" "Hello from Greeting" 900 || { cat "$work/dev-$lang.log"; exit 1; }
  sleep 1
  # The fixture first (it is a source too: both saves make one build), then the reconciler.
  python3 - "$project/fixtures/01-new-object-gets-its-config-map.yaml" "$source" "$from" "$to" <<'EOF'
import sys
fixture, source, old, new = sys.argv[1:]
text = open(fixture).read()
text = text.replace("      data:\n        message: Hello from Greeting\n", "      data:\n        message: Hello from Greeting!\n")
open(fixture, "w").write(text)
code = open(source).read()
assert old in code, (old, source)
open(source, "w").write(code.replace(old, new))
EOF
  saved=$(now)
  wait_message "$kubeconfig" "Hello from Greeting!" 300 || { cat "$work/dev-$lang.log"; exit 1; }
  seen=$(now)
  build=$(grep -o 'built [^ ]* in [0-9.]* s' "$work/dev-$lang.log" | tail -1 | awk '{print $4}')
  kill "$dev_pid"; wait "$dev_pid" 2>/dev/null || true; dev_pid=
  rows+=("$(printf '| %-10s | %8s | %16.2f |' "$lang" "$build" "$(echo "$seen - $saved" | bc)")")
done

echo "save-to-cluster, one run each, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores:"
echo
echo "| language   | build s  | save → cluster s |"
echo "|------------|----------|------------------|"
printf '%s\n' "${rows[@]}"
