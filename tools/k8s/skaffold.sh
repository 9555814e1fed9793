#!/usr/bin/env bash
# skaffold against the test cluster (tools/k8s/cluster.sh), with no Docker
# daemon and no registry: skaffold.yaml's profile test-cluster builds the
# development image (skaffold-dev-build.sh) and imports it into the nodes'
# containerds (PLANTSTORE_TEST_CLUSTER, set here, says where).
#
#   tools/k8s/skaffold.sh run  -p test-cluster
#   tools/k8s/skaffold.sh dev  -p test-cluster [--port-forward]
#   tools/k8s/skaffold.sh dev  -p test-cluster,debug   # under Delve
#   tools/k8s/skaffold.sh delete -p test-cluster
#
# `dev` watches with a debounce of 50 ms, not skaffold's 1 s: an edit passes
# it twice (the source, then the binary the sync sends).
#
# skaffold's local builder asks a Docker Engine API for the ID of every image
# it did not push, custom builds included, and deploys the image under a tag
# made of that ID. Podman's API service answers from its own storage below
# the cluster's directory, where the build script loads each image too; it
# is started on first use and stopped by `cluster.sh down` with the cluster.
#
# Environment: CLUSTER_DIR (default /tmp/plantstore-cluster).
set -euo pipefail
TOOLS_MOD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$TOOLS_MOD/../.." && pwd)
DIR=${CLUSTER_DIR:-/tmp/plantstore-cluster}
export CLUSTER_DIR=$DIR
[[ -f $DIR/kubeconfig && -f $DIR/pids ]] ||
  { echo "skaffold.sh: no test cluster in $DIR: start one with make cluster-up (CLUSTER_NODES=1 for one node), or set CLUSTER_DIR" >&2; exit 1; }
command -v go >/dev/null || { echo "skaffold.sh: needs Go on PATH (skaffold, helm and kubectl are built from tools/k8s)" >&2; exit 1; }

BIN=$("$TOOLS_MOD/build.sh" skaffold helm kubectl | tail -n 1)
if ! command -v podman >/dev/null; then
  "$REPO/tools/apt-get.sh" update -qq && DEBIAN_FRONTEND=noninteractive "$REPO/tools/apt-get.sh" install -y -qq --no-install-recommends podman >/dev/null
fi

# The storage the API service and the build script share.
PODMAN=(podman --root "$DIR/podman/root" --runroot "$DIR/podman/run" --storage-driver overlay)
sock=$DIR/podman/api.sock
ping() { curl -sf --max-time 2 --unix-socket "$sock" http://podman/_ping >/dev/null; }
if ! ping; then
  mkdir -p "$DIR/podman" "$DIR/logs"
  "${PODMAN[@]}" system service --time=0 "unix://$sock" >"$DIR/logs/podman-api.log" 2>&1 &
  echo "$! podman-api" >>"$DIR/pids"
  for _ in $(seq 40); do ping && break; sleep 0.25; done
  ping || { echo "skaffold.sh: podman's API service did not start; see $DIR/logs/podman-api.log" >&2; exit 1; }
fi

export DOCKER_HOST=unix://$sock KUBECONFIG=$DIR/kubeconfig PATH=$BIN:$PATH PLANTSTORE_TEST_CLUSTER=$DIR
export SKAFFOLD_UPDATE_CHECK=false SKAFFOLD_INTERACTIVE=false SKAFFOLD_COLLECT_METRICS=false
export SKAFFOLD_WATCH_POLL_INTERVAL=${SKAFFOLD_WATCH_POLL_INTERVAL:-50}
cd "$REPO"
exec skaffold "$@"
