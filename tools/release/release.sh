#!/usr/bin/env bash
# make release VERSION=x.y.z REGISTRY=host[:port]/path: builds, signs and
# publishes one release without a Docker daemon (the steps: docs/release.md,
# "Build type") into REGISTRY and RELEASE_DIR (default bin/release/VERSION).
#
# Environment: VERSION, REGISTRY (required); SRC (the source tree, default
# this repository; it must be a clean git work tree unless ALLOW_DIRTY=true);
# SIGN=key (default: COSIGN_KEY, default bin/release/cosign.key, made with an
# empty password when missing; no transparency log) or SIGN=keyless (hosted
# CI: Fulcio and Rekor through the workflow's OIDC token); PLATFORMS (default
# "amd64 arm64"); REPRODUCE=true builds every platform twice and fails unless
# both builds give the same digests; HELM (the helm command).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
: "${VERSION:?VERSION=x.y.z}" "${REGISTRY:?REGISTRY=host[:port]/path}"
SRC=$(cd "${SRC:-$root}" && pwd)
RELEASE_DIR=${RELEASE_DIR:-$root/bin/release/$VERSION}
SIGN=${SIGN:-key}
COSIGN_KEY=${COSIGN_KEY:-$root/bin/release/cosign.key}
PLATFORMS=${PLATFORMS:-amd64 arm64}
REPRODUCE=${REPRODUCE:-false}
HELM=${HELM:-go tool -modfile=$root/tools/k8s/go.mod helm}
export GOWORK=off

t0=$SECONDS
step() { printf '== [%4ss] %s\n' "$((SECONDS - t0))" "$*"; }
die() { echo "release: $*" >&2; exit 1; }

[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "VERSION $VERSION is not x.y.z[-pre]"
if [ -f "$SRC/VERSION" ] && [ "$(cat "$SRC/VERSION")" != "$VERSION" ]; then
  die "VERSION=$VERSION but $SRC/VERSION says $(cat "$SRC/VERSION") (make version-set VERSION=$VERSION first)"
fi
REVISION=$(git -C "$SRC" rev-parse HEAD)
if [ "${ALLOW_DIRTY:-false}" != true ] && [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
  die "$SRC has uncommitted changes: a release is built from a commit (ALLOW_DIRTY=true to try it anyway)"
fi
SOURCE_DATE_EPOCH=$(git -C "$SRC" log -1 --format=%ct HEAD)
CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
LICENSES=Apache-2.0
SOURCE_URL=https://github.com/plantstore/plantstore
IMAGE=$REGISTRY/plantstore
CHART_REPO=oci://$REGISTRY/charts
export SOURCE_DATE_EPOCH VERSION REVISION LICENSES
started=$(date +%s)

mkdir -p "$RELEASE_DIR"
tools=$root/bin/tools
step "building the release tools (tools/release/build.sh: cosign, cyclonedx-gomod, releasetool)"
"$root/tools/release/build.sh"
cosign=$tools/cosign
releasetool=$tools/releasetool
cyclonedx=$tools/cyclonedx-gomod

# A registry on loopback or in the test cluster speaks plain HTTP.
case $REGISTRY in
  localhost*|127.*|\[::1\]*) plain_http=(--plain-http); cosign_insecure=(--allow-insecure-registry --allow-http-registry) ;;
  *) plain_http=(); cosign_insecure=() ;;
esac

# 1. One image per platform, verified, and (REPRODUCE=true) rebuilt.
archives=()
declare -A platform_digest
for arch in $PLATFORMS; do
  archive=$RELEASE_DIR/image-linux-$arch.tar
  step "image linux/$arch from $SRC at $REVISION"
  GOARCH=$arch SRC=$SRC OUT=$archive "$root/tools/image/build.sh" >"$RELEASE_DIR/build-$arch.log" 2>&1 \
    || { tail -30 "$RELEASE_DIR/build-$arch.log"; die "build of linux/$arch failed"; }
  platform_digest[$arch]=$(tar -xOf "$archive" index.json | jq -r '.manifests[0].digest')
  grep -E '^(ca-certificates|digest|size)' "$RELEASE_DIR/build-$arch.log" | sed 's/^/  /'
  step "verifying linux/$arch"
  EXPECT_VERSION=$VERSION EXPECT_REVISION=$REVISION "$root/tools/image/verify.sh" "$archive" >"$RELEASE_DIR/verify-$arch.log" 2>&1 \
    || { grep -E 'FAIL|verify:' "$RELEASE_DIR/verify-$arch.log"; die "linux/$arch failed verification"; }
  grep -E -- '--version:|ok +(User|Entrypoint|no shell)' "$RELEASE_DIR/verify-$arch.log" | sed 's/^ */  /'
  if [ "$REPRODUCE" = true ]; then
    step "rebuilding linux/$arch to compare digests"
    GOARCH=$arch SRC=$SRC OUT=$RELEASE_DIR/rebuild-$arch.tar "$root/tools/image/build.sh" >"$RELEASE_DIR/rebuild-$arch.log" 2>&1 \
      || die "rebuild of linux/$arch failed"
    again=$(tar -xOf "$RELEASE_DIR/rebuild-$arch.tar" index.json | jq -r '.manifests[0].digest')
    [ "$again" = "${platform_digest[$arch]}" ] || die "linux/$arch is not reproducible: ${platform_digest[$arch]} then $again"
    echo "  reproducible: both builds $again"
  fi
  archives+=("$archive")
done

# 2. The index, its annotations, and the push.
annotations=(
  -annotation "org.opencontainers.image.title=plantstore"
  -annotation "org.opencontainers.image.description=plantstore HTTP service: API on 8080, admin (probes, metrics) on 9090"
  -annotation "org.opencontainers.image.source=$SOURCE_URL"
  -annotation "org.opencontainers.image.revision=$REVISION"
  -annotation "org.opencontainers.image.version=$VERSION"
  -annotation "org.opencontainers.image.created=$CREATED"
  -annotation "org.opencontainers.image.licenses=$LICENSES"
)
step "image index of ${PLATFORMS// /, }"
rm -rf "$RELEASE_DIR/image-index"
index_digest=$("$releasetool" index -o "$RELEASE_DIR/image-index" -ref-name "$VERSION" "${annotations[@]}" "${archives[@]}")
echo "  $index_digest"
if [ "$REPRODUCE" = true ]; then
  rebuilt=()
  for arch in $PLATFORMS; do rebuilt+=("$RELEASE_DIR/rebuild-$arch.tar"); done
  rm -rf "$RELEASE_DIR/rebuild-index"
  again=$("$releasetool" index -o "$RELEASE_DIR/rebuild-index" -ref-name "$VERSION" "${annotations[@]}" "${rebuilt[@]}")
  [ "$again" = "$index_digest" ] || die "the index is not reproducible: $index_digest then $again"
  echo "  reproducible: the rebuilt platforms give the same index $again"
  rm -rf "$RELEASE_DIR"/rebuild-*
fi
# The index's manifests carry the annotations, so their digests are not the
# archives': attestations go to the ones the registry serves.
index_blob=$RELEASE_DIR/image-index/blobs/sha256/${index_digest#sha256:}
for arch in $PLATFORMS; do
  platform_digest[$arch]=$(jq -r --arg a "$arch" '.manifests[] | select(.platform.architecture == $a) | .digest' "$index_blob")
  echo "  linux/$arch: ${platform_digest[$arch]}"
done
step "pushing $IMAGE:$VERSION"
pushed=$("$releasetool" push -layout "$RELEASE_DIR/image-index" "$IMAGE:$VERSION")
[ "$pushed" = "$index_digest" ] || die "pushed $pushed, built $index_digest"
image_ref=$IMAGE@$index_digest

# 3 and 4. SBOMs, provenance and the signature, through cosign.
sign_flags=()
case $SIGN in
  key)
    if [ ! -f "$COSIGN_KEY" ]; then
      step "no $COSIGN_KEY: generating a cosign key pair (empty password) for local releases"
      mkdir -p "$(dirname "$COSIGN_KEY")"
      (cd "$(dirname "$COSIGN_KEY")" && COSIGN_PASSWORD='' "$cosign" generate-key-pair --output-key-prefix "$(basename "${COSIGN_KEY%.key}")" >/dev/null)
    fi
    export COSIGN_PASSWORD=${COSIGN_PASSWORD:-}
    sign_flags=(--key "$COSIGN_KEY" --tlog-upload=false)
    ;;
  keyless) sign_flags=() ;;
  *) die "SIGN=$SIGN: key or keyless" ;;
esac

step "SBOMs (CycloneDX, cyclonedx-gomod and the base layer's Debian packages)"
for arch in $PLATFORMS; do
  sbom=$RELEASE_DIR/sbom-linux-$arch.cdx.json
  (cd "$SRC" && GOOS=linux GOARCH=$arch CGO_ENABLED=0 "$cyclonedx" app -json -licenses -main cmd/plantstore -output "$sbom.gomod" . 2>"$RELEASE_DIR/sbom-$arch.log") \
    || { tail -5 "$RELEASE_DIR/sbom-$arch.log"; die "cyclonedx-gomod failed for linux/$arch"; }
  debs=$(sed -n 's/^ca-certificates \(.*\), tzdata \(.*\)$/\1 \2/p' "$RELEASE_DIR/build-$arch.log")
  read -r ca_version tz_version <<<"$debs"
  jq --arg ca "$ca_version" --arg tz "$tz_version" --arg image "$image_ref" --arg arch "$arch" '
    .components += [
      {type: "library", name: "ca-certificates", version: $ca, purl: "pkg:deb/debian/ca-certificates@\($ca)?arch=all&distro=debian-12", licenses: [{license: {name: "MPL-2.0 AND GPL-2.0-or-later"}}]},
      {type: "data", name: "tzdata", version: $tz, purl: "pkg:deb/debian/tzdata@\($tz)?arch=all&distro=debian-12"}
    ]
    | .metadata.properties += [{name: "plantstore:image", value: $image}, {name: "plantstore:platform", value: "linux/\($arch)"}]' \
    "$sbom.gomod" >"$sbom"
  rm -f "$sbom.gomod"
  echo "  linux/$arch: $(jq '.components | length' "$sbom") components, $(jq -r .specVersion "$sbom") CycloneDX"
  "$cosign" attest "${sign_flags[@]}" "${cosign_insecure[@]}" --yes --type cyclonedx --predicate "$sbom" \
    "$IMAGE@${platform_digest[$arch]}" >/dev/null 2>"$RELEASE_DIR/attest-sbom-$arch.log" \
    || { cat "$RELEASE_DIR/attest-sbom-$arch.log"; die "attesting the linux/$arch SBOM failed"; }
done
# The index carries the SBOM of every platform as one attestation each.
for arch in $PLATFORMS; do
  "$cosign" attest "${sign_flags[@]}" "${cosign_insecure[@]}" --yes --type cyclonedx \
    --predicate "$RELEASE_DIR/sbom-linux-$arch.cdx.json" "$image_ref" >/dev/null 2>>"$RELEASE_DIR/attest-sbom-index.log" \
    || { cat "$RELEASE_DIR/attest-sbom-index.log"; die "attesting the SBOM on the index failed"; }
done

step "provenance (SLSA v1)"
builder_id=${BUILDER_ID:-${GITHUB_SERVER_URL:-local}${GITHUB_WORKFLOW_REF:+/$GITHUB_WORKFLOW_REF}}
[ "$builder_id" = local ] && builder_id="$SOURCE_URL/blob/main/tools/release/release.sh@local:$(hostname)"
platform_flags=()
for arch in $PLATFORMS; do platform_flags+=(-platform "linux/$arch"); done
first_log=$RELEASE_DIR/build-${PLATFORMS%% *}.log
go_version=$(grep -o 'go build with go[0-9.]*' "$first_log" | head -1 | awk '{print $4}')
deb_flags=()
while read -r pkg version sha; do
  deb_flags+=(-dep "sha256:$sha pkg:deb/debian/$pkg@$version?arch=all&distro=debian-12")
done < <(sed -n 's/^deb \([^ ]*\) \([^ ]*\) sha256:\([0-9a-f]*\)$/\1 \2 \3/p' "$first_log")
"$releasetool" provenance -o "$RELEASE_DIR/provenance.json" -version "$VERSION" -revision "$REVISION" \
  -builder-id "$builder_id" -invocation-id "${GITHUB_RUN_ID:-local-$started}" -started "$started" -finished "$(date +%s)" \
  -source "git+$SOURCE_URL" -internal "goToolchain=$go_version" -internal "sourceDateEpoch=$SOURCE_DATE_EPOCH" \
  "${deb_flags[@]}" "${platform_flags[@]}"
"$cosign" attest "${sign_flags[@]}" "${cosign_insecure[@]}" --yes --type slsaprovenance1 \
  --predicate "$RELEASE_DIR/provenance.json" "$image_ref" >/dev/null 2>"$RELEASE_DIR/attest-provenance.log" \
  || { cat "$RELEASE_DIR/attest-provenance.log"; die "attesting the provenance failed"; }

step "signing $image_ref"
"$cosign" sign "${sign_flags[@]}" "${cosign_insecure[@]}" --yes -a "version=$VERSION" "$image_ref" \
  >/dev/null 2>"$RELEASE_DIR/sign-image.log" || { cat "$RELEASE_DIR/sign-image.log"; die "signing the image failed"; }

# 5. The chart, pinned to the image it was released with.
step "chart $VERSION, image pinned to $index_digest"
chart_work=$(mktemp -d /tmp/plantstore-chart.XXXXXX)
trap 'rm -rf "$chart_work"' EXIT
cp -a "$SRC/charts/plantstore" "$chart_work/plantstore"
values=$chart_work/plantstore/values.yaml
# The first repository:, tag: and digest: under `image:` are the service's.
awk -v repo="$IMAGE" -v digest="$index_digest" -v tag="$VERSION" '
  /^image:/ { in_image = 1; print; next }
  in_image && /^[^ #]/ { in_image = 0 }
  in_image && /^  repository:/ { print "  repository: " repo; next }
  in_image && /^  tag:/ { print "  tag: \"" tag "\""; next }
  in_image && /^  digest:/ { print "  digest: \"" digest "\""; next }
  { print }' "$values" >"$values.new" && mv "$values.new" "$values"
grep -A7 '^image:' "$values" | grep -E 'repository|tag|digest' | sed 's/^/  /'
rm -f "$RELEASE_DIR"/plantstore-*.tgz
$HELM package "$chart_work/plantstore" --version "$VERSION" --app-version "$VERSION" -d "$RELEASE_DIR" >/dev/null
chart_tgz=$RELEASE_DIR/plantstore-$VERSION.tgz
step "helm push $chart_tgz $CHART_REPO"
$HELM push "$chart_tgz" "$CHART_REPO" "${plain_http[@]}" >"$RELEASE_DIR/helm-push.log" 2>&1 \
  || { cat "$RELEASE_DIR/helm-push.log"; die "helm push failed"; }
chart_digest=$(sed -n 's/^Digest: *//p' "$RELEASE_DIR/helm-push.log")
[ -n "$chart_digest" ] || { cat "$RELEASE_DIR/helm-push.log"; die "helm push printed no digest"; }
chart_ref=$REGISTRY/charts/plantstore@$chart_digest
step "signing $chart_ref"
"$cosign" sign "${sign_flags[@]}" "${cosign_insecure[@]}" --yes -a "version=$VERSION" "$chart_ref" \
  >/dev/null 2>"$RELEASE_DIR/sign-chart.log" || { cat "$RELEASE_DIR/sign-chart.log"; die "signing the chart failed"; }

if [ -f "$SRC/CHANGELOG.md" ] && [ -x "$root/tools/release/notes.sh" ]; then
  (cd "$SRC" && "$root/tools/release/notes.sh" "$VERSION") >"$RELEASE_DIR/notes.md" || true
fi

platforms_json=$(for arch in $PLATFORMS; do printf '{"platform":"linux/%s","digest":"%s"}\n' "$arch" "${platform_digest[$arch]}"; done | jq -s .)
jq -n --arg version "$VERSION" --arg revision "$REVISION" --arg created "$CREATED" \
  --arg image "$IMAGE" --arg index "$index_digest" --argjson platforms "$platforms_json" \
  --arg chart "$CHART_REPO/plantstore" --arg chart_digest "$chart_digest" --arg sign "$SIGN" \
  '{version: $version, revision: $revision, created: $created,
    image: {repository: $image, tag: $version, digest: $index, platforms: $platforms},
    chart: {reference: $chart, version: $version, digest: $chart_digest},
    signing: $sign, attestations: ["https://cyclonedx.org/bom", "https://slsa.dev/provenance/v1"]}' >"$RELEASE_DIR/release.json"
if [ "$SIGN" = key ]; then cp "${COSIGN_KEY%.key}.pub" "$RELEASE_DIR/cosign.pub"; fi

step "done"
echo "RELEASE version=$VERSION revision=${REVISION:0:12} image=$image_ref platforms=$(echo "$PLATFORMS" | wc -w) chart=$CHART_REPO/plantstore:$VERSION@$chart_digest signed=$SIGN seconds=$((SECONDS - t0))"
