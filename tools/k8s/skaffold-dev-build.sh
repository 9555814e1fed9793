#!/usr/bin/env bash
# skaffold's custom build of plantstore's development image, and the compile
# step of its file sync (skaffold.yaml). Not the release image: its PID 1 is
# tools/k8s/cmd/k8s-devrun, which restarts the service whenever skaffold
# syncs a new bin/dev/plantstore into the pod; tools/k8s/cmd/k8s-devimage
# writes it in a moment, without a daemon.
#
#   tools/k8s/skaffold-dev-build.sh         the image $IMAGE (skaffold sets
#                                           IMAGE and PUSH_IMAGE)
#   tools/k8s/skaffold-dev-build.sh binary  only bin/dev/plantstore, the
#                                           binary the sync sends (skaffold's
#                                           custom test, on every saved Go file)
#   tools/k8s/skaffold-dev-build.sh deps    the image's dependencies, a JSON array
#
# The image is loaded into the Docker Engine API at $DOCKER_HOST (Docker, or
# tools/k8s/skaffold.sh's podman), pushed with skopeo when PUSH_IMAGE=true,
# and, when PLANTSTORE_TEST_CLUSTER names the test cluster's directory
# (skaffold.sh), imported into its nodes under the tag skaffold deploys.
#
# Environment: DEV_DEBUG=1 (the debug profile): the binary built for Delve
# (no optimizations or inlining, with DWARF) and dlv in the image. GOARCH
# (default the host's).
set -euo pipefail
TOOLS_MOD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$TOOLS_MOD/../.." && pwd)
OUT=$REPO/bin/dev
if [[ ${1:-} == deps ]]; then
  cd "$REPO"
  deps=(go.mod go.sum tools/k8s/skaffold-dev-build.sh tools/k8s/cmd/k8s-devrun/*.go tools/k8s/cmd/k8s-devimage/*.go)
  # Listed from the start, an empty file until the first build: skaffold
  # registers its watch with the list from before that build, and a binary
  # appearing in a later list would be "added", and synced once for nothing.
  [[ -f bin/dev/plantstore ]] || { mkdir -p bin/dev && : >bin/dev/plantstore; }
  deps+=(bin/dev/plantstore)
  printf '"%s",' "${deps[@]}" | sed 's/^/[/; s/,$/]/'
  exit 0
fi
PKG=github.com/plantstore/plantstore
export GOWORK=off
command -v go >/dev/null || { echo "skaffold-dev-build.sh: needs Go (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$OUT/tools"
linux() { CGO_ENABLED=0 GOOS=linux "$@"; }

# binary: go build skips the write when the binary is up to date, so an edit
# that does not change it (a test file) syncs nothing.
binary() {
  # No VCS stamp (git status on every edit), no DWARF compiled or linked
  # and no symbol table: less to compile, link and sync.
  local flags=(-buildvcs=false -gcflags "all=-dwarf=false" -ldflags "-s -w -X $PKG/internal/version.Version=dev -X $PKG/internal/version.Revision=dev")
  if [[ ${DEV_DEBUG:-} == 1 ]]; then
    flags=(-buildvcs=false -gcflags "$PKG/...=-N -l" -ldflags "-X $PKG/internal/version.Version=dev-debug -X $PKG/internal/version.Revision=dev")
  fi
  # The link's output renamed into place, not copied across file systems:
  # skaffold never reads (and syncs) half a binary.
  mkdir -p "$OUT/.gotmp"
  (cd "$REPO" && GOTMPDIR=$OUT/.gotmp linux go build "${flags[@]}" -o "$OUT/plantstore" ./cmd/plantstore)
}
if [[ ${1:-} == binary ]]; then
  binary
  exit 0
fi
: "${IMAGE:?set by skaffold (the image to build)}"

# took: the build's steps and their times, for its last line.
took=() t=$(date +%s%3N)
step() {
  local now
  now=$(date +%s%3N)
  took+=("$1 $(((now - t) / 100 / 10)).$(((now - t) / 100 % 10))s")
  t=$now
}
binary
step binary
(cd "$TOOLS_MOD" && linux go build -o "$OUT/tools/" ./cmd/k8s-devrun && go build -o "$OUT/tools/" ./cmd/k8s-devimage)
dlv=()
if [[ ${DEV_DEBUG:-} == 1 ]]; then
  (cd "$REPO/tools" && linux go build -trimpath -ldflags=-s -o "$OUT/tools/dlv" github.com/go-delve/delve/cmd/dlv)
  dlv=(-dlv "$OUT/tools/dlv")
fi
step tools

# The full name the kubelet asks containerd for (a bare "plantstore" is
# docker.io/library/plantstore): the archive, the load and the import use it.
full=$IMAGE first=${IMAGE%%/*}
if [[ $IMAGE != */* ]]; then full=docker.io/library/$IMAGE
elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then full=docker.io/$IMAGE
fi
archive=$OUT/image.tar
load=(-load)
[[ ${PUSH_IMAGE:-false} != true ]] || load=()
id=$("$OUT/tools/k8s-devimage" -o "$archive" -tag "$full" -arch "$(linux go env GOARCH)" -base-etc "$REPO/tools/image/base/etc" \
  -devrun "$OUT/tools/k8s-devrun" -binary "$OUT/plantstore" "${dlv[@]}" "${load[@]}")
step "image${load[*]:+ (written and loaded)}"

if [[ ${PUSH_IMAGE:-false} == true ]]; then
  command -v skopeo >/dev/null || { echo "skaffold-dev-build.sh: pushing needs skopeo (apt-get install skopeo)" >&2; exit 1; }
  skopeo copy --quiet "docker-archive:$archive" "docker://$IMAGE"
elif [[ -n ${PLANTSTORE_TEST_CLUSTER:-} ]]; then
  # skaffold deploys REPO:ID (build.TagWithImageID), which the kubelet asks
  # containerd for by its full name: tagged so on every node.
  CLUSTER_DIR=$PLANTSTORE_TEST_CLUSTER "$TOOLS_MOD/cluster.sh" import "$archive" >/dev/null
  deployed=${full%:*}:${id#sha256:}
  for sock in $(CLUSTER_DIR=$PLANTSTORE_TEST_CLUSTER "$TOOLS_MOD/cluster.sh" nodes | awk '{print $4}'); do
    ctr --address "$sock" -n k8s.io images tag --force "$full" "$deployed" >/dev/null
  done
  step "import into the nodes"
fi
rm -f "$archive"
steps=$(printf '%s, ' "${took[@]}")
echo "built $IMAGE (development image $id: devrun, ${dlv[*]:+dlv, }bin/dev/plantstore): ${steps%, }"
