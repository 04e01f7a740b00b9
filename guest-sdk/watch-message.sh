# Sourced by guest-sdk/scaffold-test.sh and tests/save-to-cluster.sh, which time a save until the
# scaffold's ConfigMap `hello` shows it.
# watch_message KUBECONFIG MESSAGE TIMEOUT: returns 0 once the ConfigMap's data.message is MESSAGE,
# 1 if it is not within TIMEOUT s. One kubectl watches, rather than one started per poll: a kubectl
# every fraction of a second takes a share of the two cores the build needs, and the figure would
# measure kubectl. The watch lists the current data first, so a change made before it starts is seen.
watch_message() {
  local watch pid line seen=
  exec {watch}< <(exec timeout "$3" kubectl --kubeconfig "$1" get configmap hello --watch \
    -o 'jsonpath={.data.message}{"\n"}' 2>/dev/null)
  pid=$!
  while IFS= read -r -u "$watch" line; do
    [[ "$line" == "$2" ]] && { seen=1; break; }
  done
  kill "$pid" 2>/dev/null || true
  exec {watch}<&-
  [[ -n "$seen" ]]
}
