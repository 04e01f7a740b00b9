#!/usr/bin/env bash
# Builds {{name}}.wasm with the Weir C SDK's `weir-c build` (the contract's C bindings kept in the
# SDK, Debian's clang-19 and wasi-libc, wasm-component-ld; the SDK's checkout installs the tools:
# guest-sdk/setup.sh).
set -euo pipefail
cd "$(dirname "$0")"
"${WEIR_SDK:-{{sdk}}}/c/bin/weir-c" build src/{{module}}.c --crd crd.yaml -o {{name}}.wasm
