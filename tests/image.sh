#!/usr/bin/env bash
# Builds the host image from deploy/Dockerfile's `prebuilt` stage around a weir binary that is
# already built, so that nothing is pulled and nothing compiles twice, and prints its size.
#   tests/image.sh [BINARY [TAG]]      (defaults: target/debug/weir, localhost/weir:test)
# The context (target/image/) holds the binary without its debug info, and rootfs/: the shared
# libraries `ldd` lists for it, CA certificates, /etc/passwd and /etc/group with the user
# 65532, and /tmp and /var/cache/weir writable by anyone.
# Images are kept with podman's `vfs` storage driver (no overlay or fuse needed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary=$(realpath "${1:-$root/target/debug/weir}")
tag=${2:-localhost/weir:test}
"$root/tests/setup-podman.sh"

# The two final stages must run the same way: compare what follows their "run-time:" marker.
stage_tail() { awk -v stage="$1" '
  /^FROM / { inside = ($0 ~ stage) }
  inside && /^# run-time:/ { on = 1; next }
  /^FROM / { on = 0 }
  on && /^[A-Z]/ { print }' "$root/deploy/Dockerfile"; }
prebuilt=$(stage_tail ' AS prebuilt$')
final=$(stage_tail 'distroless')
if [[ -z "$prebuilt" || "$prebuilt" != "$final" ]]; then
  printf 'deploy/Dockerfile: the prebuilt and final stages differ after "run-time:":\n%s\n---\n%s\n' \
    "$prebuilt" "$final" >&2
  exit 1
fi

ctx="$root/target/image"
print_size() {
  local size
  size=$(podman --storage-driver vfs image inspect "$tag" --format '{{.Size}}')
  printf 'image %s: %d MB (weir %d MB, from %s)\n' "$tag" $((size / 1000000)) \
    $(($(stat -c %s "$ctx/weir") / 1000000)) "${binary#"$root"/}"
}
# Built from this very binary already, and the tag still names that image (another checkout on
# the machine may have moved it): nothing to do.
sum="$(sha256sum "$binary" "$root/deploy/Dockerfile" | sha256sum | cut -d' ' -f1) $tag"
image_id() { podman --storage-driver vfs image inspect "$tag" --format '{{.Id}}' 2>/dev/null || true; }
if [[ -f "$ctx/built" && "$(cat "$ctx/built")" == "$sum $(image_id)" ]]; then
  print_size
  exit 0
fi
rm -rf "$ctx"
mkdir -p "$ctx/rootfs/etc/ssl/certs" "$ctx/rootfs/tmp" "$ctx/rootfs/var/cache/weir" "$ctx/rootfs/home/nonroot"
chmod 1777 "$ctx/rootfs/tmp" "$ctx/rootfs/var/cache/weir"
objcopy --strip-debug "$binary" "$ctx/weir"
for lib in $(ldd "$ctx/weir" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
  cp -L --parents "$lib" "$ctx/rootfs/"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
  > "$ctx/rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$ctx/rootfs/etc/group"

podman --storage-driver vfs build --quiet --target prebuilt -f "$root/deploy/Dockerfile" -t "$tag" "$ctx" >/dev/null
echo "$sum $(image_id)" > "$ctx/built"
print_size
