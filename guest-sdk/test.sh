#!/usr/bin/env bash
# Runs the native tests of the Python, JavaScript and C guest SDKs and their Blog plugins (no component is built).
#   guest-sdk/test.sh     installs the toolchains first (guest-sdk/setup.sh), then runs
#                         python -m unittest, node --test and guest-sdk/c/test.sh; exits non-zero if any test fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/guest-sdk/setup.sh"
py="$root/target/venv/bin/python"
log=$(mktemp); trap 'rm -f "$log"' EXIT
status=0

# unittest prints "Ran N tests" and "FAILED (failures=F, errors=E)" or "OK".
run_python() {
  local dir=$1
  echo "== python -m unittest ($dir)"
  (cd "$root/$dir" && PYTHONPATH="$root/guest-sdk/python" "$py" -m unittest discover -s tests -t . 2>&1) | tee -a "$log" || status=1
}
run_node() {
  local dir=$1
  echo "== node --test ($dir)"
  (cd "$root/$dir" && node --test --test-reporter=tap test/*.test.js 2>&1) | tee -a "$log" | grep -Ev '^ *(---|\.\.\.|duration_ms|type:)' || status=1
}

run_python guest-sdk/python
[[ -d "$root/plugins/blog-py/tests" ]] && run_python plugins/blog-py
[[ -d "$root/plugins/metacontroller-example/tests" ]] && run_python plugins/metacontroller-example
run_node guest-sdk/js
[[ -d "$root/plugins/blog-js/test" ]] && run_node plugins/blog-js
echo "== guest-sdk/c/test.sh (the C SDK and the C Blog, natively)"
"$root/guest-sdk/c/test.sh" 2>&1 | tee -a "$log" || status=1

# Sums one number per matching line of the log (awk, so no match is 0, not an error).
total() { awk -v re="$1" -v f="$2" '$0 ~ re { split($f, kv, "="); s += (kv[2] == "" ? kv[1] : kv[2]) } END { print s + 0 }' "$log"; }
ran=$(total '^Ran [0-9]+ tests?' 2)
py_failed=$({ grep -Eo '(failures|errors)=[0-9]+' "$log" || true; } | awk -F= '{s += $2} END {print s + 0}')
js_pass=$(total '^# pass [0-9]+' 3)
js_fail=$(total '^# fail [0-9]+' 3)
c_pass=$(total '^c [a-z]+: [0-9]+ passed' 3)
c_fail=$(total '^c [a-z]+: [0-9]+ passed, [0-9]+ failed' 5)
echo "guest-sdk: $((ran - py_failed + js_pass + c_pass)) passed, $((py_failed + js_fail + c_fail)) failed"
exit "$status"
