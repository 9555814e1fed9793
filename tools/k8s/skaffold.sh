#!/usr/bin/env bash
# skaffold against the test cluster (tools/k8s/cluster.sh), with no Docker
# daemon and no registry: the profile test-cluster of skaffold.yaml builds
# the development image (tools/k8s/skaffold-dev-build.sh) and imports it into
# the nodes' containerds (PLANTSTORE_TEST_CLUSTER, set here, says where).
#
#   tools/k8s/skaffold.sh run  -p test-cluster
#   tools/k8s/skaffold.sh dev  -p test-cluster [--port-forward]
#   tools/k8s/skaffold.sh dev  -p test-cluster,debug   # under Delve
#   tools/k8s/skaffold.sh delete -p test-cluster
#
# `dev` watches with a debounce of 50 ms (--watch-poll-interval, unless
# given), not skaffold's 1 s: an edit passes it twice (the source, then the
# binary the sync sends; both land by rename). make dev runs this with a URL
# and a token.
#
# skaffold's local builder asks a Docker Engine API for the ID of every image
# it did not push, custom builds included (pkg/skaffold/build/local and
# build/custom: ServerVersion, ImageInspect, ImageTag), and deploys the image
# under a tag made of that ID. Podman's API service answers those calls from
# its own storage, here below the cluster's directory: the build script loads
# each image there as well. It is started on first use, and stopped by
# `cluster.sh down` like the cluster's other processes. skaffold itself is
# built from tools/k8s/skaffold (its own module).
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

# podman_args: the storage the API service and the build script share.
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
