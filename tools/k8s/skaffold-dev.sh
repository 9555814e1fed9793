#!/usr/bin/env bash
# make dev: the inner loop on a cluster for a person: `skaffold dev` with the
# development image and file sync (skaffold.yaml), a saved Go file answering
# from the cluster in seconds. It prints the API's URL, the reference page's
# and a token once the first deploy answers; Ctrl-C uninstalls the release,
# and stops the test cluster if this script started it.
#
#   make dev                            the test cluster in $CLUSTER_DIR: the
#                                       one up, or one started here (one node
#                                       unless CLUSTER_NODES says more)
#   make dev DEV_KUBE_CONTEXT=kind-dev  an existing kube context instead, the
#                                       images loaded into the Docker Engine
#                                       API at $DOCKER_HOST
#   make dev DEV_DEBUG=1                the service under Delve: attach a DAP
#                                       client (an editor) to 127.0.0.1:56268
#
# Environment: DEV_NAMESPACE (default default), and cluster.sh's (CLUSTER_DIR...).
set -euo pipefail
TOOLS_MOD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$TOOLS_MOD/../.." && pwd)
DIR=${CLUSTER_DIR:-/tmp/plantstore-cluster}
export CLUSTER_DIR=$DIR
NS=${DEV_NAMESPACE:-default}
die() { echo "make dev: $*" >&2; exit 1; }
command -v go >/dev/null || die "needs Go on PATH (https://go.dev/dl): the service, skaffold, helm and kubectl are built with it"

profiles=()
[[ ${DEV_DEBUG:-} != 1 ]] || profiles=(debug)
started_cluster=0
if [[ -n ${DEV_KUBE_CONTEXT:-} ]]; then
  BIN=$("$TOOLS_MOD/build.sh" skaffold helm kubectl | tail -n 1)
  export PATH=$BIN:$PATH
  kubectl config get-contexts "$DEV_KUBE_CONTEXT" >/dev/null 2>&1 ||
    die "no kube context $DEV_KUBE_CONTEXT in ${KUBECONFIG:-~/.kube/config} (kubectl config get-contexts lists them)"
  sock=${DOCKER_HOST:-unix:///var/run/docker.sock}
  curl -sf --max-time 2 --unix-socket "${sock#unix://}" http://docker/_ping >/dev/null ||
    die "no Docker Engine API at $sock for the image (start Docker, or set DOCKER_HOST); or leave DEV_KUBE_CONTEXT unset for the test cluster"
  SKAFFOLD=(skaffold --kube-context "$DEV_KUBE_CONTEXT")
  export SKAFFOLD_WATCH_POLL_INTERVAL=${SKAFFOLD_WATCH_POLL_INTERVAL:-50}
  KUBECTL=(kubectl --context "$DEV_KUBE_CONTEXT")
else
  if ! "$TOOLS_MOD/cluster.sh" status >/dev/null 2>&1; then
    [[ $(id -u) == 0 ]] || die "no test cluster in $DIR, and starting one needs root (or use DEV_KUBE_CONTEXT=<a kube context>)"
    echo "make dev: no test cluster in $DIR: starting one (CLUSTER_NODES=${CLUSTER_NODES:-1}; stopped again on Ctrl-C)"
    # In a session of its own: the terminal's Ctrl-C reaches this script,
    # which stops skaffold and then the cluster, not the cluster's processes.
    CLUSTER_NODES=${CLUSTER_NODES:-1} setsid --wait "$TOOLS_MOD/cluster.sh" up
    started_cluster=1
  fi
  profiles=(test-cluster "${profiles[@]}")
  SKAFFOLD=("$TOOLS_MOD/skaffold.sh")
  PATH=$(cat "$DIR/bin"):$PATH
  export PATH KUBECONFIG=$DIR/kubeconfig
  KUBECTL=(kubectl)
fi

log=$(mktemp "${TMPDIR:-/tmp}/plantstore-dev.XXXXXX")
pid=''
cleanup() {
  trap '' INT TERM
  trap - EXIT
  if [[ -n $pid ]]; then
    echo "make dev: stopping skaffold (helm uninstall)"
    kill -INT "$pid" 2>/dev/null || true # skaffold dev uninstalls the release
    wait "$pid" 2>/dev/null || true
  fi
  [[ -z ${tail_pid:-} ]] || kill "$tail_pid" 2>/dev/null || true
  # What it said while cleaning up (the Ctrl-C may have stopped the tail).
  [[ -z $pid ]] || sed -n '/^Cleaning up/,$p' "$log" | grep -v '^\[plantstore\]' || true
  if ((started_cluster)); then
    echo "make dev: stopping the test cluster it started"
    "$TOOLS_MOD/cluster.sh" down || true
  fi
  rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cd "$REPO"
p=$(IFS=,; echo "${profiles[*]}")
# skaffold in a session of its own too: one Ctrl-C, passed on once (a second
# one would cut its cleanup short).
setsid "${SKAFFOLD[@]}" dev ${p:+-p "$p"} -n "$NS" --port-forward=user "$@" >"$log" 2>&1 &
pid=$!
tail -n +1 -f "$log" &
tail_pid=$!
until grep -q 'Watching for changes' "$log"; do
  kill -0 "$pid" 2>/dev/null || { wait "$pid" || true; pid=''; die "skaffold dev stopped before its first deploy (its output is above)"; }
  sleep 0.5
done
port=$(sed -n 's|.*service/plantstore in namespace .*, remote port 8080 -> http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | tail -n 1)
token=$("${KUBECTL[@]}" get secret -n "$NS" plantstore-tokens -o jsonpath='{.data.tokens}' | base64 -d |
  grep -v -E '^(#|sha256:|issuer=|subject=|claim=|$)' | head -n 1 | cut -d' ' -f1)
cat <<EOF

== plantstore in the cluster (kube namespace $NS); save a Go file and it answers in seconds
   API:             http://127.0.0.1:${port:-8080}
   reference page:  http://127.0.0.1:${port:-8080}/docs
   token:           $token
   curl -i -X POST http://127.0.0.1:${port:-8080}/plants -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d '{"id": 1, "name": "Monstera"}'
EOF
[[ ${DEV_DEBUG:-} != 1 ]] || echo "   Delve (DAP, JSON-RPC): 127.0.0.1:$(sed -n 's|.*remote port 56268 -> http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | tail -n 1)"
echo "   Ctrl-C: uninstall$( ((started_cluster)) && echo ", stop the cluster")"
echo
wait "$pid"
