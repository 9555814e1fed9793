#!/usr/bin/env bash
# skaffold's custom build command of the profile test-cluster (skaffold.yaml):
# builds plantstore's image with buildah (tools/image/build.sh, no daemon),
# loads it into the storage of the podman API service that tools/k8s/skaffold.sh
# runs for skaffold's image bookkeeping, and imports it into the test
# cluster's nodes' containerds, also under the tag skaffold deploys: the
# image's ID.
# skaffold sets IMAGE (the reference to build) and PUSH_IMAGE.
set -euo pipefail
TOOLS_MOD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$TOOLS_MOD/../.." && pwd)
DIR=${CLUSTER_DIR:-/tmp/plantstore-cluster}
: "${IMAGE:?set by skaffold}"
if [[ ${PUSH_IMAGE:-false} == true ]]; then
  echo "skaffold-build.sh: the test-cluster profile imports into the node and never pushes (build.local.push: false)" >&2
  exit 1
fi
# normalize REF: the full name the kubelet asks containerd for (a bare
# "plantstore" is docker.io/library/plantstore).
normalize() {
  local ref=$1 first=${1%%/*}
  if [[ $ref != */* ]]; then ref=docker.io/library/$ref
  elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then ref=docker.io/$ref
  fi
  echo "$ref"
}
# Built, loaded and imported under its full name: containerd's CRI plugin
# normalizes a short one ("plantstore:tag") in its cache, then cannot find
# the image under that name and fails the container.
full=$(normalize "$IMAGE")
out=$DIR/skaffold/image.tar
mkdir -p "$DIR/skaffold"
OUT=$out IMAGE=$full "$REPO/tools/image/build.sh"

PODMAN=(podman --root "$DIR/podman/root" --runroot "$DIR/podman/run" --storage-driver overlay)
"${PODMAN[@]}" load -q -i "$out" >/dev/null
id=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$full")

"$TOOLS_MOD/cluster.sh" import "$out" >/dev/null
# skaffold deploys REPO:ID (build.TagWithImageID), which the kubelet asks
# containerd for by its full name: tagged so on every node.
deployed=${full%:*}:${id#sha256:}
for sock in $("$TOOLS_MOD/cluster.sh" nodes | awk '{print $4}'); do
  ctr --address "$sock" -n k8s.io images tag --force "$full" "$deployed" >/dev/null
done
rm -f "$out"
echo "imported $IMAGE into the nodes as $deployed"
