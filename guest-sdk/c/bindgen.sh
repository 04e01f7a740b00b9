#!/usr/bin/env bash
# Writes the C bindings of the contract the C SDK implements into guest-sdk/c/bindings/:
#   guest-sdk/c/bindgen.sh           regenerates them (after a change of WIT_BINDGEN_VERSION below)
#   guest-sdk/c/bindgen.sh --check   fails if the kept files differ from what it generates
# The bindings are a pure function of the WIT package (wit/0.3.0, released, so never edited) and
# of wit-bindgen's version, so they are generated once and kept in the repository: building a C
# plugin needs no wit-bindgen, and a new machine does not compile it (a release build of the
# crate from nothing is minutes of CPU). bindings/SHA256SUMS records the WIT file they come from
# and the files written; guest-sdk/c/test.sh checks it on every test run.
# wit-bindgen (crate wit-bindgen-cli, the `c` generator only) is installed here only, at the
# version pinned below, into target/tools (cargo install --locked: the versions its lockfile pins).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tools="$root/target/tools"
bindings=guest-sdk/c/bindings
WIT_BINDGEN_VERSION=0.63.0

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "usage: guest-sdk/c/bindgen.sh [--check]" >&2; exit 2 ;;
esac

if ! { [[ -x "$tools/bin/wit-bindgen" ]] && "$tools/bin/wit-bindgen" --version 2>/dev/null | grep -q " $WIT_BINDGEN_VERSION"; }; then
  cargo install --quiet --root "$tools" --locked wit-bindgen-cli --version "$WIT_BINDGEN_VERSION" \
    --no-default-features --features c
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/weir-c-bindgen.XXXXXX")
trap 'rm -rf "$out"' EXIT
# reconciler.h and reconciler.c (the exports' lifting and lowering, cabi_realloc, the *_free and
# post-return functions) and reconciler_component_type.o (the world's type, which
# wasm-component-ld reads to make the component).
"$tools/bin/wit-bindgen" c "$root/wit/0.3.0" --world reconciler --out-dir "$out" >"$out/wit-bindgen.log" 2>&1 \
  || { cat "$out/wit-bindgen.log" >&2; exit 1; }
files=(reconciler.h reconciler.c reconciler_component_type.o)
if $check; then
  for f in "${files[@]}"; do
    cmp -s "$out/$f" "$root/$bindings/$f" \
      || { echo "$bindings/$f is not what wit-bindgen $WIT_BINDGEN_VERSION generates: run guest-sdk/c/bindgen.sh" >&2; exit 1; }
  done
  echo "$bindings: as wit-bindgen $WIT_BINDGEN_VERSION generates them"
  exit 0
fi
mkdir -p "$root/$bindings"
for f in "${files[@]}"; do cp "$out/$f" "$root/$bindings/$f"; done
(cd "$root" && sha256sum wit/0.3.0/reconciler.wit "${files[@]/#/$bindings/}" >"$bindings/SHA256SUMS")
echo "wrote $bindings (wit-bindgen $WIT_BINDGEN_VERSION)"
