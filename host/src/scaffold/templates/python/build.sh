#!/usr/bin/env bash
# Builds {{name}}.wasm with the Weir Python SDK's `weir-py build` (componentize-py, pinned by the SDK).
# The SDK is installed once (requirements.txt) into a virtual environment: $WEIR_VENV, default .venv.
set -euo pipefail
cd "$(dirname "$0")"
venv=${WEIR_VENV:-.venv}
if [[ ! -x "$venv/bin/weir-py" ]]; then
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements.txt
fi
"$venv/bin/weir-py" build {{module}}:{{Kind}} --path src --crd crd.yaml -o {{name}}.wasm
