#!/usr/bin/env bash
# Builds the release tools of tools/release/go.mod (cosign, CNCF Distribution's
# registry, cyclonedx-gomod, crane) and releasetool into bin/tools, the one
# place release.sh, check.sh, verify.sh, the test cluster and .ci/run take
# them from. Go's build cache makes a second run quick.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export GOWORK=off
mkdir -p "$root/bin/tools"
cd "$root/tools/release"
# Without debug information, as tools/k8s/build.sh builds: a fifth less compile.
go build -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$root/bin/tools/" tool
go build -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$root/bin/tools/releasetool" .
echo "release tools: built; CPU (this script's, then its children's: user, system):"
times
