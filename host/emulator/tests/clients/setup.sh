#!/usr/bin/env bash
# Installs the real clients the emulator's conformance tests drive (host/emulator/tests/emulator/clients*):
#   target/emulator-clients/venv             the official Python client (python/requirements.txt)
#   target/emulator-clients/js/node_modules  @kubernetes/client-node (js/package-lock.json)
#   target/emulator-clients/kubectl/bin/kubectl  a current kubectl (kubectl/requirements.txt), which
#                                            the kubectl tests run beside the machine's own
# Idempotent: each part is skipped while its pinned list is unchanged since it was installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
python=${PYTHON:-python3}
dest="$root/target/emulator-clients"
mkdir -p "$dest/js"

# Runs "$@" unless $stamp holds $sum; records it afterwards.
install_once() {
  local sum=$1 stamp=$2; shift 2
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" ]]; then return; fi
  "$@"
  echo "$sum" > "$stamp"
}

install_python() {
  [[ -x "$dest/venv/bin/python" ]] || "$python" -m venv "$dest/venv"
  "$dest/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/python/requirements.txt"
}
install_once "$(sha256sum "$here/python/requirements.txt" | cut -d' ' -f1)" "$dest/venv.installed" install_python

install_js() {
  cp "$here/js/package.json" "$here/js/package-lock.json" "$dest/js/"
  (cd "$dest/js" && npm ci --no-audit --no-fund --loglevel=error)
}
install_once "$(cat "$here/js/package.json" "$here/js/package-lock.json" | sha256sum | cut -d' ' -f1)" \
  "$dest/js/installed" install_js

install_kubectl() {
  [[ -x "$dest/kubectl/bin/python" ]] || "$python" -m venv "$dest/kubectl"
  "$dest/kubectl/bin/pip" install --quiet --disable-pip-version-check -r "$here/kubectl/requirements.txt"
  "$dest/kubectl/bin/kubectl" version --client
}
install_once "$(sha256sum "$here/kubectl/requirements.txt" | cut -d' ' -f1)" "$dest/kubectl.installed" install_kubectl
