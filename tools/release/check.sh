#!/usr/bin/env bash
# make release-check: make release (REPRODUCE=true) into a real OCI registry
# (CNCF Distribution on a loopback port), verify.sh passing on what was
# pushed and refusing an unsigned and a tampered copy (docs/release.md).
#
# CHECK_REGISTRY=HOST:PORT runs it against a registry already running (the
# test cluster's: cluster-test.d/05-release.sh, which then installs what it
# pushed); the copies go under HOST:PORT/unsigned and HOST:PORT/tampered.
# RELEASE_DIR (default: a temporary directory) keeps what make release
# wrote. Prints one RELEASE-CHECK line of figures. Needs root (the images).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${VERSION:-$(cat "$root/VERSION")}
tools=$root/bin/tools
t0=$SECONDS
step() { printf '== [%4ss] %s\n' "$((SECONDS - t0))" "$*"; }

step "building the release tools"
"$root/tools/release/build.sh"

work=$(mktemp -d /tmp/plantstore-release-check.XXXXXX)
registry_pid=
cleanup() {
  if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

host=${CHECK_REGISTRY:-}
if [ -z "$host" ]; then
  # Port 0: the registry binds the port the kernel gives it and logs its
  # address (at level info), so no port is chosen here and handed to it.
  REGISTRY_HTTP_ADDR=127.0.0.1:0 REGISTRY_LOG_LEVEL=info REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY=$work/registry \
    "$tools/registry" serve "$root/tools/release/registry.yml" >"$work/registry.log" 2>&1 &
  registry_pid=$!
  for _ in $(seq 100); do
    host=$(sed -n 's/.*listening on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/registry.log" | head -n 1)
    [ -n "$host" ] || ! kill -0 "$registry_pid" 2>/dev/null && break
    sleep 0.1
  done
  step "registry (CNCF Distribution $("$tools/registry" --version | awk '{print $3}')) on ${host:-no address}"
fi
curl -fsS -o /dev/null "http://$host/v2/" || { cat "$work/registry.log" 2>/dev/null; echo "release-check: no registry answers on $host" >&2; exit 1; }
release_dir=${RELEASE_DIR:-$work/release}

REGISTRY=$host/plantstore
step "make release VERSION=$VERSION REGISTRY=$REGISTRY (REPRODUCE=true)"
VERSION=$VERSION REGISTRY=$REGISTRY REPRODUCE=true RELEASE_DIR=$release_dir "$root/tools/release/release.sh" | tee "$work/release.log" | grep -E '^(==|RELEASE|  (reproducible|linux/))'
index=$(jq -r .image.digest "$release_dir/release.json")

step "verify what was pushed"
"$root/tools/release/verify.sh" "$REGISTRY" "$VERSION" | tee "$work/verify.log" | grep -E '^(  ok|VERIFY)'

# copy_release FROM TO [--signatures]: the image index, its platforms and the
# chart under another path of the same registry; with the cosign signature
# and attestation tags too when asked.
crane=("$tools/crane" --insecure)
copy_release() {
  "${crane[@]}" copy "$1/plantstore:$VERSION" "$2/plantstore:$VERSION" 2>/dev/null
  "${crane[@]}" copy "$1/charts/plantstore:$VERSION" "$2/charts/plantstore:$VERSION" 2>/dev/null
  if [ "${3:-}" = --signatures ]; then
    local repo tag
    for repo in plantstore charts/plantstore; do
      for tag in $("${crane[@]}" ls "$1/$repo" | grep -E '^sha256-.*\.(sig|att)$'); do
        "${crane[@]}" copy "$1/$repo:$tag" "$2/$repo:$tag" 2>/dev/null
      done
    done
  fi
}
negatives=0
expect_refused() { # expect_refused WHAT REGISTRY PATTERN
  if "$root/tools/release/verify.sh" "$2" "$VERSION" >"$work/neg.log" 2>&1; then
    cat "$work/neg.log"; echo "release-check: verify.sh accepted $1" >&2; exit 1
  fi
  grep -q "$3" "$work/neg.log" || { cat "$work/neg.log"; echo "release-check: $1 refused for another reason than '$3'" >&2; exit 1; }
  echo "  refused, as it must be: $1: $(grep -m1 'verify: FAIL' "$work/neg.log" | sed 's/^verify: FAIL //')"
  negatives=$((negatives + 1))
}

step "an unsigned copy of the release must be refused"
copy_release "$REGISTRY" "$host/unsigned"
expect_refused "the unsigned copy" "$host/unsigned" "no valid signature on $host/unsigned/plantstore"

step "a tampered release (its tag moved to an index the key never signed) must be refused"
copy_release "$REGISTRY" "$host/tampered" --signatures
"$tools/releasetool" index -o "$work/tampered-index" -ref-name "$VERSION" \
  -annotation "org.opencontainers.image.version=$VERSION" -annotation "org.opencontainers.image.description=not what was signed" \
  "$release_dir"/image-linux-*.tar >/dev/null
tampered=$("$tools/releasetool" push -layout "$work/tampered-index" "$host/tampered/plantstore:$VERSION")
[ "$tampered" != "$index" ] || { echo "release-check: the tampered index has the signed digest" >&2; exit 1; }
expect_refused "the tampered tag ($tampered)" "$host/tampered" "no valid signature on $host/tampered/plantstore"
# The same copy with the tag put back verifies: the refusal above was the tag's.
"${crane[@]}" tag "$host/tampered/plantstore@$index" "$VERSION" 2>/dev/null
"$root/tools/release/verify.sh" "$host/tampered" "$VERSION" >/dev/null
echo "  the copy verifies again once its tag is back on $index"

step "done"
reproduced=$(grep -c '^  reproducible' "$work/release.log" || true)
echo "RELEASE-CHECK version=$VERSION index=$index platforms=$(jq '.image.platforms | length' "$release_dir/release.json") reproducible=$reproduced/$(($(jq '.image.platforms | length' "$release_dir/release.json") + 1)) $(grep '^VERIFY' "$work/verify.log" | sed 's/^VERIFY //; s/version=[^ ]* //; s/image=[^ ]* //; s/platforms=[^ ]* //') refused=$negatives/2 seconds=$((SECONDS - t0))"
