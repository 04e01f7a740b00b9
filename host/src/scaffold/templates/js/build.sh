#!/usr/bin/env bash
# Builds {{name}}.wasm with the Weir JavaScript SDK's `weir-js build` (componentize-js, pinned by the SDK).
set -euo pipefail
cd "$(dirname "$0")"
[[ -e node_modules/@weir/guest-sdk ]] || npm install --no-audit --no-fund --loglevel=error
# `npm run build`'s command, run without npm (half a second less on each `weir dev --watch` save).
node_modules/.bin/weir-js build src/{{name}}.js --crd crd.yaml -o {{name}}.wasm
