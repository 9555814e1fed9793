#!/usr/bin/env bash
# make release-check: the release pipeline end to end against a real OCI
# registry (CNCF Distribution, on a loopback port, storage in a temporary
# directory), as CI runs it:
#
#   1. make release into it, every platform built twice (REPRODUCE=true: the
#      same digests, or it fails);
#   2. tools/release/verify.sh passes on what was pushed;
#   3. and fails on an unsigned copy of the release and on a tampered one
#      (the version tag moved to an image index the key never signed).
#
# Prints one RELEASE-CHECK line of figures. Needs root (the image builds).
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

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
step "registry (CNCF Distribution $("$tools/registry" --version | awk '{print $3}')) on 127.0.0.1:$port"
REGISTRY_HTTP_ADDR=127.0.0.1:$port REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY=$work/registry \
  "$tools/registry" serve "$root/tools/release/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/" || { cat "$work/registry.log"; echo "release-check: the registry did not start" >&2; exit 1; }

REGISTRY=127.0.0.1:$port/plantstore
step "make release VERSION=$VERSION REGISTRY=$REGISTRY (REPRODUCE=true)"
VERSION=$VERSION REGISTRY=$REGISTRY REPRODUCE=true RELEASE_DIR=$work/release "$root/tools/release/release.sh" | tee "$work/release.log" | grep -E '^(==|RELEASE|  (reproducible|linux/))'
index=$(jq -r .image.digest "$work/release/release.json")

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
copy_release "$REGISTRY" "127.0.0.1:$port/unsigned"
expect_refused "the unsigned copy" "127.0.0.1:$port/unsigned" "no valid signature on 127.0.0.1:$port/unsigned/plantstore"

step "a tampered release (its tag moved to an index the key never signed) must be refused"
copy_release "$REGISTRY" "127.0.0.1:$port/tampered" --signatures
"$tools/releasetool" index -o "$work/tampered-index" -ref-name "$VERSION" \
  -annotation "org.opencontainers.image.version=$VERSION" -annotation "org.opencontainers.image.description=not what was signed" \
  "$work/release"/image-linux-*.tar >/dev/null
tampered=$("$tools/releasetool" push -layout "$work/tampered-index" "127.0.0.1:$port/tampered/plantstore:$VERSION")
[ "$tampered" != "$index" ] || { echo "release-check: the tampered index has the signed digest" >&2; exit 1; }
expect_refused "the tampered tag ($tampered)" "127.0.0.1:$port/tampered" "no valid signature on 127.0.0.1:$port/tampered/plantstore"
# The same copy with the tag put back verifies: the refusal above was the tag's.
"${crane[@]}" tag "127.0.0.1:$port/tampered/plantstore@$index" "$VERSION" 2>/dev/null
"$root/tools/release/verify.sh" "127.0.0.1:$port/tampered" "$VERSION" >/dev/null
echo "  the copy verifies again once its tag is back on $index"

step "done"
reproduced=$(grep -c '^  reproducible' "$work/release.log" || true)
echo "RELEASE-CHECK version=$VERSION index=$index platforms=$(jq '.image.platforms | length' "$work/release/release.json") reproducible=$reproduced/$(($(jq '.image.platforms | length' "$work/release/release.json") + 1)) $(grep '^VERIFY' "$work/verify.log" | sed 's/^VERIFY //; s/version=[^ ]* //; s/image=[^ ]* //; s/platforms=[^ ]* //') refused=$negatives/2 seconds=$((SECONDS - t0))"
