#!/usr/bin/env bash
# Installs the Python, JavaScript and C guest SDKs with their toolchains (versions pinned by the packages):
#   target/venv                    the Python SDK as a user gets it (`pip install guest-sdk/python`), with
#                                  `weir-py`, componentize-py and PyYAML (pyproject.toml, extra `test`)
#   guest-sdk/js/node_modules      the JS SDK's componentize-js and esbuild (guest-sdk/js/npm-shrinkwrap.json)
#   plugins/blog-js/node_modules   the JS Blog plugin: the SDK linked, and its test dependencies (its package-lock.json)
#   target/tools/bin               the C SDK's wasm-component-ld, with Debian's clang-19 and wasi-libc
#                                  (guest-sdk/c/setup.sh, versions pinned there)
# Idempotent: each step is skipped while what it installs is unchanged since the last install.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}

# Runs "$@" unless $stamp holds $sum; records it afterwards.
install_once() {
  local sum=$1 stamp=$2; shift 2
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" ]]; then return; fi
  "$@"
  echo "$sum" > "$stamp"
}

venv="$root/target/venv"
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
# Checksum of what the package holds: reinstalled when the SDK or the contract changes.
py_sum=$(cd "$root" && cat guest-sdk/python/pyproject.toml guest-sdk/python/hatch_build.py guest-sdk/python/weir_reconciler/*.py wit/*.wit wit/*/*.wit | sha256sum | cut -d' ' -f1)
# Its dependencies as pinned, then the SDK itself afresh (pip keeps an installed copy of the same version).
install_python_sdk() {
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$root/guest-sdk/python[test]"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$root/guest-sdk/python"
}
install_once "$py_sum" "$venv/.weir-installed" install_python_sdk

for lock in guest-sdk/js/npm-shrinkwrap.json plugins/blog-js/package-lock.json; do
  [[ -f "$root/$lock" ]] || continue
  dir=$(dirname "$lock")
  mkdir -p "$root/$dir/node_modules"
  install_once "$(sha256sum "$root/$lock" | cut -d' ' -f1)" "$root/$dir/node_modules/.weir-installed" \
    npm ci --prefix "$root/$dir" --no-audit --no-fund --loglevel=error
done

"$root/guest-sdk/c/setup.sh"
