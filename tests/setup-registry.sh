#!/usr/bin/env bash
# Installs what the Plugin tests need: a real OCI registry to run on loopback (Debian's
# docker-registry, CNCF Distribution) and htpasswd for its basic-auth test. Idempotent.
set -euo pipefail
if [[ -x /usr/bin/docker-registry ]] && command -v htpasswd >/dev/null 2>&1; then
  exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry apache2-utils
# The package starts a system registry on :5000; the tests start their own.
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now docker-registry >/dev/null 2>&1 || true
fi
