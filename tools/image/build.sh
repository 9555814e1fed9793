#!/usr/bin/env bash
# Builds plantstore's runtime image without a Docker daemon or a registry, as
# an OCI archive (default bin/plantstore-image.tar), in the steps of
# docs/image.md ("Building here, without a daemon"), and prints its digest
# and size.
#
# Skaffold's custom builder (skaffold.yaml, profile daemonless) sets IMAGE, the
# archive's reference instead of plantstore:$VERSION, and PUSH_IMAGE=true to
# push it there with skopeo.
#
# Environment: SRC (the source tree to build, default this repository: a
# release of an older commit builds that commit's tree with this pipeline),
# OUT, VERSION, REVISION (default from git, as the Makefile's),
# LICENSES (default Apache-2.0, as the Dockerfile's), SOURCE_DATE_EPOCH (image
# timestamps; default the last commit's time, so that a rebuild of the same
# commit gives the same digest), GOARCH (default the host's), IMAGE_GOTOOLCHAIN
# (default go$GO_VERSION, fetched by the go command from the module proxy when
# it is not the local Go; "local" builds with the installed Go instead).
# Needs root; installs buildah (and jq) from Debian's packages when missing.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tools/image"
src=$(cd "${SRC:-$root}" && pwd)
OUT=${OUT:-$root/bin/plantstore-image.tar}
VERSION=${VERSION:-$(git -C "$src" describe --tags --always --dirty 2>/dev/null || echo dev)}
REVISION=${REVISION:-$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)}
LICENSES=${LICENSES:-Apache-2.0}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || echo 0)}
export GOWORK=off
GOARCH=${GOARCH:-$(go env GOARCH)}
PKG=github.com/plantstore/plantstore
REF=${IMAGE:-plantstore:$VERSION}

[ "$(id -u)" = 0 ] || { echo "build: needs root (buildah's storage, the layers' file ownership)" >&2; exit 1; }

t0=$SECONDS
step() { printf '== [%3ss] %s\n' "$((SECONDS - t0))" "$*"; }

# Tools: from Debian's packages when missing, as the Makefile installs redis-server.
need=()
for t in buildah:buildah dpkg-deb:dpkg jq:jq; do command -v "${t%%:*}" >/dev/null 2>&1 || need+=("${t#*:}"); done
if ((${#need[@]})); then
  step "installing ${need[*]} from Debian's packages"
  "$root/tools/apt-get.sh" update -qq
  DEBIAN_FRONTEND=noninteractive "$root/tools/apt-get.sh" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d /tmp/plantstore-image.XXXXXX)
B=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
cleanup() {
  "${B[@]}" rm --all >/dev/null 2>&1 || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

step "building imagetool (tools/image)"
(cd "$here" && env -u GOARCH go build -o "$work/imagetool" .)
GO_VERSION=$("$work/imagetool" arg -f "$src/Dockerfile" GO_VERSION)

step "staging the build stage's context through .dockerignore"
"$work/imagetool" context -C "$src" -o "$work/src"

step "go build with ${IMAGE_GOTOOLCHAIN:-go$GO_VERSION} (the Dockerfile's GO_VERSION is $GO_VERSION), linux/$GOARCH, version $VERSION, revision $REVISION"
mkdir -p "$work/out"
(
  cd "$work/src"
  export GOTOOLCHAIN="${IMAGE_GOTOOLCHAIN:-go$GO_VERSION}" GOFLAGS=
  go mod download
  CGO_ENABLED=0 GOOS=linux GOARCH="$GOARCH" \
    go build -trimpath \
      -ldflags "-s -w -X $PKG/internal/version.Version=$VERSION -X $PKG/internal/version.Revision=$REVISION" \
      -o "$work/out/plantstore" ./cmd/plantstore
)
go version "$work/out/plantstore"

step "fetching Debian's ca-certificates and tzdata packages"
mkdir -p "$work/debs" && chmod 0777 "$work/debs"
if ! (cd "$work/debs" && "$root/tools/apt-get.sh" download ca-certificates tzdata >/dev/null 2>&1); then
  "$root/tools/apt-get.sh" update -qq
  (cd "$work/debs" && "$root/tools/apt-get.sh" download ca-certificates tzdata >/dev/null 2>&1)
fi
debver() { dpkg-deb -f "$1" Version; }
ca_deb=$(ls "$work"/debs/ca-certificates_*.deb)
tz_deb=$(ls "$work"/debs/tzdata_*.deb)
echo "ca-certificates $(debver "$ca_deb"), tzdata $(debver "$tz_deb")"
for deb in "$ca_deb" "$tz_deb"; do
  echo "deb $(dpkg-deb -f "$deb" Package) $(debver "$deb") sha256:$(sha256sum "$deb" | cut -d' ' -f1)"
done

step "assembling the distroless-static-nonroot-equivalent base layer"
base="$work/base"
mkdir -p "$work/x/ca" "$work/x/tz" "$base/etc/ssl/certs" "$base/usr/share" "$base/tmp" "$base/root" "$base/home/nonroot"
dpkg-deb -x "$ca_deb" "$work/x/ca"
dpkg-deb -x "$tz_deb" "$work/x/tz"
# As distroless does: every certificate the package ships, one bundle.
find "$work/x/ca/usr/share/ca-certificates/mozilla" -name '*.crt' | LC_ALL=C sort | xargs cat >"$base/etc/ssl/certs/ca-certificates.crt"
cp -a "$work/x/tz/usr/share/zoneinfo" "$base/usr/share/zoneinfo"
install -m 0644 "$here/base/etc/passwd" "$here/base/etc/group" "$here/base/etc/nsswitch.conf" "$base/etc/"
chmod 0644 "$base/etc/ssl/certs/ca-certificates.crt"
chown -R 0:0 "$base"
chmod 1777 "$base/tmp"
chmod 0700 "$base/root" "$base/home/nonroot"
chown 65532:65532 "$base/home/nonroot"

export BUILDAH_ISOLATION=chroot
ctr=$("${B[@]}" from --pull=never scratch)
mnt=$("${B[@]}" mount "$ctr")
cp -a "$base/." "$mnt/"
"${B[@]}" umount "$ctr" >/dev/null
"${B[@]}" config \
  --user 65532 --workingdir /home/nonroot \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --os linux --arch "$GOARCH" \
  --created-by "tools/image/build.sh: distroless static-debian12:nonroot equivalent (ca-certificates $(debver "$ca_deb"), tzdata $(debver "$tz_deb"))" \
  "$ctr"
"${B[@]}" commit --quiet --rm --format oci --identity-label=false --timestamp "$SOURCE_DATE_EPOCH" \
  "$ctr" localhost/plantstore-base:static-debian12-nonroot >/dev/null

step "adding the runtime layer: /plantstore, user, ports, entrypoint, labels"
ctr=$("${B[@]}" from --pull=never localhost/plantstore-base:static-debian12-nonroot)
"${B[@]}" copy --quiet --chown 0:0 --chmod 0755 "$ctr" "$work/out/plantstore" /plantstore
"${B[@]}" config \
  --user 65532:65532 \
  --port 8080/tcp --port 9090/tcp \
  --entrypoint '["/plantstore"]' \
  --label org.opencontainers.image.title=plantstore \
  --label "org.opencontainers.image.description=plantstore HTTP service: API on 8080, admin (probes, metrics) on 9090" \
  --label org.opencontainers.image.source=https://$PKG \
  --label "org.opencontainers.image.version=$VERSION" \
  --label "org.opencontainers.image.revision=$REVISION" \
  --label "org.opencontainers.image.licenses=$LICENSES" \
  --created-by 'COPY --from=build /out/plantstore /plantstore # tools/image/build.sh' \
  "$ctr"

step "committing the OCI archive"
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
"${B[@]}" commit --quiet --rm --format oci --identity-label=false --disable-compression=false \
  --timestamp "$SOURCE_DATE_EPOCH" "$ctr" "oci-archive:$OUT:$REF" >/dev/null

if [ "${PUSH_IMAGE:-}" = true ]; then
  step "pushing to $REF (PUSH_IMAGE=true)"
  command -v skopeo >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive "$root/tools/apt-get.sh" install -y -qq --no-install-recommends skopeo >/dev/null
  skopeo copy --quiet "oci-archive:$OUT:$REF" "docker://$REF"
fi

digest=$(tar -xOf "$OUT" index.json | jq -r '.manifests[0].digest')
manifest=$(tar -xOf "$OUT" "blobs/sha256/${digest#sha256:}")
layers=$(jq '[.layers[].size] | add' <<<"$manifest")
step "done"
echo "image:    $OUT ($REF, linux/$GOARCH)"
echo "digest:   $digest"
echo "size:     $(stat -c %s "$OUT") bytes archive, $layers bytes compressed layers ($(jq '.layers | length' <<<"$manifest") layers)"
