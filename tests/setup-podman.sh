#!/usr/bin/env bash
# Installs what the deploy test needs to build and run the host image: Debian's podman, buildah
# and runc (crun, podman's default runtime, refuses the cgroup layout of some CI machines, so the
# test runs runc), and what tests/image.sh copies or runs (CA certificates, objcopy). Idempotent.
set -euo pipefail
if command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 \
  && command -v objcopy >/dev/null 2>&1 && [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  podman buildah runc ca-certificates binutils >/dev/null
