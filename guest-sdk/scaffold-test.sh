#!/usr/bin/env bash
# Tests `weir new` as a plugin author meets it: for Rust, Python and JavaScript, scaffolds a
# project in a temporary directory outside the checkout, builds it with its own build.sh, and
# runs `weir test` on its fixtures. Exits non-zero if any step fails.
#   guest-sdk/scaffold-test.sh              all three languages
#   guest-sdk/scaffold-test.sh rust python  some of them
# Caches under target/ keep a second run warm: the Rust project builds in target/scaffold (with
# the checkout's Cargo.lock, so it compiles the same dependency versions), the Python one uses
# the SDK installed in target/venv, the JavaScript one links guest-sdk/js (guest-sdk/setup.sh).
# WEIR=path/to/weir uses that binary instead of building target/debug/weir.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
langs=("$@")
[[ ${#langs[@]} -gt 0 ]] || langs=(rust python js)
if [[ -z "${WEIR:-}" ]]; then
  cargo build --quiet --manifest-path "$root/Cargo.toml" -p weir --bin weir
  WEIR="$root/target/debug/weir"
fi
"$root/guest-sdk/setup.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/weir-scaffold.XXXXXX")
trap 'rm -rf "$work"' EXIT
case "$work" in "$root"/*) echo "the temporary directory $work is inside the checkout" >&2; exit 1 ;; esac
status=0

for lang in "${langs[@]}"; do
  start=$(date +%s)
  project="$work/hello-$lang"
  echo "== weir new --lang $lang hello-$lang"
  "$WEIR" new --lang "$lang" "hello-$lang" --group demo.example.dev --output "$project" --sdk "$root/guest-sdk"
  case "$lang" in
    rust) cp "$root/Cargo.lock" "$project/Cargo.lock"
          (cd "$project" && CARGO_TARGET_DIR="$root/target/scaffold" ./build.sh) ;;
    python) (cd "$project" && WEIR_VENV="$root/target/venv" ./build.sh) ;;
    js) (cd "$project" && ./build.sh) ;;
  esac || { echo "FAILED: building the $lang scaffold"; status=1; continue; }
  "$WEIR" test "$project/hello-$lang.wasm" "$project/fixtures" || { echo "FAILED: weir test on the $lang scaffold"; status=1; }
  echo "== $lang scaffold: $(( $(date +%s) - start )) s"
done
exit "$status"
