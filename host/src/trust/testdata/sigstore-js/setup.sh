#!/usr/bin/env bash
# Installs sigstore-js, pinned by package.json and package-lock.json beside this script, into
# target/sigstore-js/node_modules for the interoperability test host/src/trust/sigstore_js_tests.rs
# (tests/run.sh runs it). Idempotent: skipped while the pinned lists are unchanged since the install.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../../.." && pwd)
dest="$root/target/sigstore-js"
sum=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ -f "$dest/installed" && "$(cat "$dest/installed")" == "$sum" ]]; then exit 0; fi
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
echo "$sum" > "$dest/installed"
