#!/usr/bin/env bash
# Installs the Python and JavaScript guest toolchains from the package registries (pinned versions):
#   target/venv                    componentize-py and PyYAML (guest-sdk/python/requirements.txt)
#   guest-sdk/js/node_modules      componentize-js and esbuild (guest-sdk/js/package-lock.json)
#   plugins/blog-js/node_modules   the JS Blog plugin's test dependencies (its package-lock.json)
# Idempotent: each step is skipped while its pin file is unchanged since the last install.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}

# Runs "$@" unless $stamp holds the checksum of $pins; records it afterwards.
install_once() {
  local pins=$1 stamp=$2; shift 2
  local sum; sum=$(sha256sum "$pins" | cut -d' ' -f1)
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" ]]; then return; fi
  "$@"
  echo "$sum" > "$stamp"
}

venv="$root/target/venv"
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
install_once "$root/guest-sdk/python/requirements.txt" "$venv/.weir-installed" \
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$root/guest-sdk/python/requirements.txt"

for dir in guest-sdk/js plugins/blog-js; do
  [[ -f "$root/$dir/package-lock.json" ]] || continue
  mkdir -p "$root/$dir/node_modules"
  install_once "$root/$dir/package-lock.json" "$root/$dir/node_modules/.weir-installed" \
    npm ci --prefix "$root/$dir" --no-audit --no-fund --loglevel=error
done
