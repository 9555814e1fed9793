#!/usr/bin/env bash
# Builds the release tools (cosign, CNCF Distribution's registry,
# cyclonedx-gomod, crane) and releasetool into bin/tools, the one place
# release.sh, check.sh, verify.sh, the test cluster and .ci/run take them
# from. cosign, crane and cyclonedx-gomod come from tools/k8s/build.sh (its
# client-go-0.34 module, with Traefik: they share the Kubernetes client
# libraries and the cloud SDKs), the registry and releasetool from this
# module. Go's build cache and the tools cache make a second run quick.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export GOWORK=off
mkdir -p "$root/bin/tools"
bin=$("$root/tools/k8s/build.sh" cosign crane cyclonedx-gomod | tail -n 1)
for t in cosign crane cyclonedx-gomod; do cp -f "$bin/$t" "$root/bin/tools/$t"; done
cd "$root/tools/release"
# Without debug information, as tools/k8s/build.sh builds: a fifth less compile.
go build -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$root/bin/tools/" tool
go build -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$root/bin/tools/releasetool" .
echo "release tools: built; CPU (this script's, then its children's: user, system):"
times
