#!/usr/bin/env bash
# Runs the C SDK's and the C Blog's native tests (clang-19 for the machine, with the address and
# undefined-behaviour sanitizers: the JSON reader and writer are the SDK's own C). Each test binary
# ends with "SUITE: N passed, M failed"; exits non-zero if any check fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sdk="$root/guest-sdk/c"
clang=${WEIR_CLANG:-clang-19}
build=$(mktemp -d "${TMPDIR:-/tmp}/weir-c-test.XXXXXX")
trap 'rm -rf "$build"' EXIT
# Everything but guest.c, which needs the contract's generated bindings (built into components only).
lib=("$sdk/src/json_read.c" "$sdk/src/json_write.c" "$sdk/src/util.c" "$sdk/src/answer.c" "$sdk/src/selector.c")
flags=(-std=c17 -g -O1 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all -I "$sdk")
status=0
"$clang" "${flags[@]}" "$sdk/test/sdk_test.c" "${lib[@]}" -o "$build/sdk_test"
"$build/sdk_test" || status=1
"$clang" "${flags[@]}" "$root/plugins/blog-c/test/blog_test.c" "$root/plugins/blog-c/blog.c" "${lib[@]}" -o "$build/blog_test"
"$build/blog_test" || status=1
exit "$status"
