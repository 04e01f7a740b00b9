#!/usr/bin/env bash
# Builds {{name}}.wasm: this crate compiled for wasm32-wasip2, which makes a WebAssembly component.
set -euo pipefail
cd "$(dirname "$0")"
if command -v rustup >/dev/null; then
  rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
fi
cargo build --target wasm32-wasip2 --release
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{module}}.wasm" {{name}}.wasm
echo "built {{name}}.wasm"
