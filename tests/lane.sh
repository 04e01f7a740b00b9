#!/usr/bin/env bash
# One lane of tests/run.sh's tests, which runs its three lanes at once (most tests wait on a
# server, a timer or a child process far more than they compute, so two cores carry three lanes):
#   tests/lane.sh e2e    LIST   the end-to-end executable
#   tests/lane.sh rust   LIST   every other test executable, the doc tests, then `weir new`'s
#                               scaffolds (after the executables, so that their save-to-cluster
#                               figure is not taken while the Rust tests compute beside it)
#   tests/lane.sh guests        the Blog copies' test, every plugin's fixtures under `weir test`,
#                               the guest SDKs' native tests
# LIST is the built test executables, one per line: "<package dir> <test target> <executable>"
# (tests/run.sh writes it from cargo's build messages). The executables run as `cargo test` runs
# them, in their package's directory, but without cargo: `cargo test` holds the build directory's
# lock while its tests run, so a second one would wait for the first instead of running beside it.
# Every part runs even when an earlier one failed; the exit status is non-zero if any failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
lane=$1
list=${2:-}
status=0

# Runs the executables of LIST whose test target is (e2e) or is not (rest) the end-to-end one.
run_executables() {
  local which=$1 dir target exe ran=0
  while IFS=$'\t' read -r dir target exe; do
    if [[ $which == e2e ]]; then [[ $target == e2e ]] || continue; else [[ $target != e2e ]] || continue; fi
    ran=$((ran + 1))
    printf '\n     Running %s (%s)\n' "$target" "${exe#"$root"/}"
    # As `cargo test -- --skip deploy_image` passed it to each: the integration target's deploy
    # test ran apart before the lanes (tests/run.sh).
    (cd "$dir" && "$exe" --skip deploy_image) || status=1
  done <"$list"
  # A lane given nothing is a broken list, not a pass.
  if ((ran == 0)); then
    echo "no test executable for the $which part in $list" >&2
    status=1
  fi
}

# `weir test` of the built plugin NAME against the fixtures in DIR.
fixtures() {
  target/debug/weir test "target/plugins/$1.wasm" "$2" || status=1
}

case "$lane" in
  e2e)
    run_executables e2e
    ;;
  rust)
    run_executables rest
    # The doc tests are compiled by rustdoc as they run; cargo holds the build lock meanwhile,
    # which no other lane needs.
    cargo test --workspace --doc || status=1
    WEIR="$root/target/debug/weir" guest-sdk/scaffold-test.sh || status=1
    ;;
  guests)
    echo "== the benchmark's Blog copies: the Blog's CRD text under each copy's names"
    # Its own feature (bench-copy) on the Blog alone, so cargo compiles the Blog's tree apart
    # (about half a minute), holding the build lock meanwhile: no other lane needs it then.
    WEIR_BLOG_COPY=3 cargo test -p weir-plugin-blog --features bench-copy --lib copy || status=1
    # `weir test` and the end-to-end harness share one compiled-plugin cache (tests/run.sh), so
    # a component is compiled once per run, whichever lane meets it first.
    echo "== Blog fixtures against every language's component"
    for p in blog blog-py blog-js blog-c; do fixtures "$p" plugins/blog/fixtures; done
    echo "== the Spread's fixtures: one parent's workload placed in several clusters (contract 0.4.0)"
    fixtures spread plugins/spread/fixtures
    echo "== the Metacontroller-style examples' fixtures (Python hooks, async JavaScript hooks)"
    fixtures metacontroller-example plugins/metacontroller-example/fixtures
    # The same fixtures through async JavaScript hooks (each hook's Promise awaited in the component).
    fixtures metacontroller-example-js plugins/metacontroller-example/fixtures
    # An async finalize hook that scales its Deployment to zero before letting go (contract 0.3.0).
    fixtures metacontroller-scale-down-js plugins/metacontroller-scale-down-js/fixtures
    # A v2 hook reading a Secret in another namespace: offline, without a policy entry (no data, refused elsewhere).
    fixtures metacontroller-secret-import-js plugins/metacontroller-secret-import-js/fixtures
    echo "== guest SDK native tests (Python, JavaScript, C)"
    guest-sdk/test.sh || status=1
    ;;
  *)
    echo "unknown lane '$lane' (e2e, rust or guests)" >&2
    exit 2
    ;;
esac
exit "$status"
