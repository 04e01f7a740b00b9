#!/usr/bin/env bash
# Delivery 1 — plugins in a ConfigMap. Prints the `weir-plugins` ConfigMap (binaryData) that the
# host's Deployment mounts at /plugins, made from component files or directories of them.
#
#   deploy/plugins/configmap.sh                       # target/plugins/blog.wasm
#   deploy/plugins/configmap.sh a.wasm dir/ | kubectl apply --server-side -f -
#
# Apply it with --server-side: client-side apply copies the whole object into an annotation,
# which is limited to 256 KiB. A ConfigMap holds at most 1 MiB in all, which fits a few Rust
# plugins (the Blog plugin is ~0.9 MB, small ones ~110 KB) but not a Python or JavaScript one: use an image (deploy/plugins/image/).
# Updating the ConfigMap is picked up by the running host (the kubelet swaps the volume's
# `..data` symlink, usually within a minute): no restart.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
namespace=${NAMESPACE:-weir}
[ $# -gt 0 ] || set -- "$root/target/plugins/blog.wasm"
args=()
total=0
for src in "$@"; do
  if [ -d "$src" ]; then files=("$src"/*.wasm); else files=("$src"); fi
  for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "configmap.sh: $f: no such component (build it: plugins/build.sh)" >&2; exit 1; }
    args+=("--from-file=$(basename "$f")=$f")
    total=$((total + $(stat -c %s "$f")))
  done
done
if [ "$total" -gt $((1024 * 1024)) ]; then
  # The API server refuses a ConfigMap whose data and binaryData add up to more than 1 MiB
  # (raw bytes; base64 is only the JSON encoding on the wire).
  echo "configmap.sh: $total bytes of components will not fit in a ConfigMap; use deploy/plugins/image/" >&2
  exit 1
fi
kubectl create configmap weir-plugins --namespace "$namespace" "${args[@]}" --dry-run=client -o yaml
