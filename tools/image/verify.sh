#!/usr/bin/env bash
# Verifies the OCI archive that tools/image/build.sh wrote (or $1, or $OUT)
# without a daemon, as docs/image.md lists. EXPECT_VERSION / EXPECT_REVISION,
# when set, must match the image's labels and the binary's --version. Needs
# root (chroot, ownership); installs jq, file and curl when missing; uses go
# (build info) and skopeo (a second reader of the archive) when present.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
IMAGE=${1:-${OUT:-$root/bin/plantstore-image.tar}}
[ -f "$IMAGE" ] || { echo "verify: no image archive at $IMAGE (run tools/image/build.sh)" >&2; exit 1; }

[ "$(id -u)" = 0 ] || { echo "verify: needs root (chroot into the image's root filesystem, file ownership)" >&2; exit 1; }
need=()
for tool in jq file curl; do command -v "$tool" >/dev/null 2>&1 || need+=("$tool"); done
if ((${#need[@]})); then
  echo "verify: installing ${need[*]} from Debian's packages"
  "$root/tools/apt-get.sh" update -qq && DEBIAN_FRONTEND=noninteractive "$root/tools/apt-get.sh" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

t0=$SECONDS
fails=0
pass() { printf '  ok    %s\n' "$*"; }
fail() { printf '  FAIL  %s\n' "$*"; fails=$((fails + 1)); }
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then pass "$what"; else fail "$what"; fi
}
step() { printf '== [%3ss] %s\n' "$((SECONDS - t0))" "$*"; }

work=$(mktemp -d /tmp/plantstore-verify.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step "archive $IMAGE"
layout="$work/layout"
mkdir -p "$layout"
tar -xf "$IMAGE" -C "$layout"
blob() { echo "$layout/blobs/${1%%:*}/${1#*:}"; }
check "oci-layout version 1.0.0" jq -e '.imageLayoutVersion == "1.0.0"' "$layout/oci-layout"
check "index.json lists one image manifest" jq -e '(.manifests | length) == 1 and .manifests[0].mediaType == "application/vnd.oci.image.manifest.v1+json"' "$layout/index.json"
manifest_digest=$(jq -r '.manifests[0].digest' "$layout/index.json")
manifest=$(blob "$manifest_digest")
config=$(blob "$(jq -r '.config.digest' "$manifest")")
echo "  manifest $manifest_digest, ref $(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"] // "-"' "$layout/index.json")"

# Every descriptor's digest and size match its blob.
while read -r digest size; do
  f=$(blob "$digest")
  if [ -f "$f" ] && [ "sha256:$(sha256sum "$f" | cut -d' ' -f1)" = "$digest" ] && [ "$(stat -c %s "$f")" = "$size" ]; then
    pass "blob $digest ($size bytes) matches its digest and size"
  else
    fail "blob $digest: missing, or its content does not match the digest or size $size"
  fi
done < <(jq -r '.manifests[] | "\(.digest) \(.size)"' "$layout/index.json"; jq -r '.config, .layers[] | "\(.digest) \(.size)"' "$manifest")

# Each layer, uncompressed, matches the config's diff_id.
mapfile -t layers < <(jq -r '.layers[] | "\(.digest) \(.mediaType)"' "$manifest")
mapfile -t diff_ids < <(jq -r '.rootfs.diff_ids[]' "$config")
if [ "${#layers[@]}" = "${#diff_ids[@]}" ]; then pass "${#layers[@]} layers, ${#diff_ids[@]} diff_ids"; else fail "${#layers[@]} layers but ${#diff_ids[@]} diff_ids"; fi
uncompress() { case $2 in *+gzip) gzip -dc "$1" ;; *+zstd) zstd -dc "$1" ;; *.tar) cat "$1" ;; *) return 1 ;; esac; }
for i in "${!layers[@]}"; do
  read -r digest mt <<<"${layers[$i]}"
  got="sha256:$(uncompress "$(blob "$digest")" "$mt" | sha256sum | cut -d' ' -f1)"
  if [ "$got" = "${diff_ids[$i]:-}" ]; then pass "layer $i uncompressed matches diff_id ${got:0:19}…"; else fail "layer $i: uncompressed $got, diff_id ${diff_ids[$i]:-none}"; fi
done

step "image config"
jqc() { jq -e "$1" "$config" >/dev/null 2>&1; }
want_user=65532:65532
if jqc ".config.User == \"$want_user\""; then pass "User $want_user"; else fail "User is $(jq -c .config.User "$config"), want $want_user"; fi
for port in 8080/tcp 9090/tcp; do
  if jqc ".config.ExposedPorts | has(\"$port\")"; then pass "exposes $port"; else fail "does not expose $port: $(jq -c .config.ExposedPorts "$config")"; fi
done
if jqc '.config.Entrypoint == ["/plantstore"]'; then pass 'Entrypoint ["/plantstore"]'; else fail "Entrypoint is $(jq -c .config.Entrypoint "$config")"; fi
if jqc '(.config.Cmd // []) == []'; then pass "no Cmd"; else fail "Cmd is $(jq -c .config.Cmd "$config")"; fi
if jqc '.os == "linux"'; then pass "os linux, architecture $(jq -r .architecture "$config")"; else fail "os is $(jq -r .os "$config")"; fi
for l in title source version revision licenses; do
  v=$(jq -r ".config.Labels[\"org.opencontainers.image.$l\"] // empty" "$config")
  if [ -n "$v" ]; then pass "label org.opencontainers.image.$l=$v"; else fail "label org.opencontainers.image.$l missing or empty"; fi
done
version=$(jq -r '.config.Labels["org.opencontainers.image.version"] // ""' "$config")
revision=$(jq -r '.config.Labels["org.opencontainers.image.revision"] // ""' "$config")
if [ -n "${EXPECT_VERSION:-}" ]; then
  if [ "$version" = "$EXPECT_VERSION" ]; then pass "version label is EXPECT_VERSION"; else fail "version label $version, EXPECT_VERSION $EXPECT_VERSION"; fi
fi
if [ -n "${EXPECT_REVISION:-}" ]; then
  if [ "$revision" = "$EXPECT_REVISION" ]; then pass "revision label is EXPECT_REVISION"; else fail "revision label $revision, EXPECT_REVISION $EXPECT_REVISION"; fi
fi

step "root filesystem"
rootfs="$work/rootfs"
mkdir -p "$rootfs"
for i in "${!layers[@]}"; do
  read -r digest mt <<<"${layers[$i]}"
  if uncompress "$(blob "$digest")" "$mt" | tar -t | grep -q '\(^\|/\)\.wh\.'; then
    fail "layer $i has whiteouts, which this plain-tar unpacking does not apply"
  fi
  uncompress "$(blob "$digest")" "$mt" | tar -x --numeric-owner --same-owner -p -C "$rootfs"
done
bin="$rootfs/plantstore"
if [ -f "$bin" ] && [ "$(stat -c '%u:%g %a' "$bin")" = "0:0 755" ]; then
  pass "/plantstore is owned by root, mode 0755 (the runtime user cannot change it)"
else
  fail "/plantstore: $(stat -c '%u:%g %a' "$bin" 2>/dev/null || echo missing)"
fi
finfo=$(file -b "$bin" 2>/dev/null || true)
case $finfo in *"statically linked"*) pass "file: ${finfo%%, BuildID*}" ;; *) fail "file: $finfo" ;; esac
lddout=$(ldd "$bin" 2>&1 || true)
case $lddout in *"not a dynamic executable"*|*"statically linked"*) pass "ldd: $(echo "$lddout" | tr -s ' \t' ' ' | sed 's/^ //')" ;; *) fail "ldd: $lddout" ;; esac
if command -v go >/dev/null 2>&1; then
  bi=$(go version -m "$bin")
  # (with -trimpath, Go leaves -ldflags out of the build info: --version below shows the stamps)
  for s in "CGO_ENABLED=0" "-trimpath=true" "GOOS=linux" "GOARCH=$(jq -r .architecture "$config")"; do
    if grep -qF -- "$s" <<<"$bi"; then pass "build info: $s"; else fail "build info lacks $s"; fi
  done
  echo "  $(head -1 <<<"$bi")"
fi
check "/etc/passwd has nonroot 65532 (home /home/nonroot)" grep -qx 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' "$rootfs/etc/passwd"
check "/etc/group has nonroot 65532" grep -qx 'nonroot:x:65532:' "$rootfs/etc/group"
ncerts=$(grep -c 'BEGIN CERTIFICATE' "$rootfs/etc/ssl/certs/ca-certificates.crt" 2>/dev/null || echo 0)
if [ "$ncerts" -gt 100 ]; then pass "CA bundle with $ncerts certificates"; else fail "CA bundle has $ncerts certificates"; fi
check "tzdata: /usr/share/zoneinfo/Europe/Berlin" test -f "$rootfs/usr/share/zoneinfo/Europe/Berlin"
if [ "$(stat -c '%u:%g %a' "$rootfs/home/nonroot" 2>/dev/null)" = "65532:65532 700" ]; then pass "/home/nonroot is 65532:65532 0700"; else fail "/home/nonroot: $(stat -c '%u:%g %a' "$rootfs/home/nonroot" 2>/dev/null || echo missing)"; fi
if [ "$(stat -c '%a' "$rootfs/tmp" 2>/dev/null)" = "1777" ]; then pass "/tmp is 1777"; else fail "/tmp: $(stat -c '%a' "$rootfs/tmp" 2>/dev/null || echo missing)"; fi
shells=
for sh in bin/sh bin/bash bin/dash bin/busybox usr/bin/sh usr/bin/bash; do
  if [ -e "$rootfs/$sh" ] || [ -L "$rootfs/$sh" ]; then shells="$shells /$sh"; fi
done
if [ -z "$shells" ]; then pass "no shell in the image"; else fail "shell(s) in the image: $shells"; fi
echo "  $(find "$rootfs" -type f | wc -l) files, $(du -sh "$rootfs" | cut -f1) unpacked"

step "binary, run from the image's root filesystem as the image's user"
mapfile -t env < <(jq -r '.config.Env[]?' "$config")
user=$(jq -r .config.User "$config")
# An image for another architecture runs under QEMU's user-mode emulator
# (Debian's qemu-user-static), copied into the unpacked root filesystem after
# the checks above, so that the chroot can execute it.
emu=()
arch=$(jq -r .architecture "$config")
host_arch=$(go env GOARCH 2>/dev/null || dpkg --print-architecture)
if [ "$arch" != "$host_arch" ]; then
  case $arch in arm64) qarch=aarch64 ;; amd64) qarch=x86_64 ;; *) qarch=$arch ;; esac
  if ! command -v "qemu-$qarch-static" >/dev/null 2>&1; then
    echo "verify: installing qemu-user-static from Debian's packages (a linux/$arch image on $host_arch)"
    "$root/tools/apt-get.sh" update -qq && DEBIAN_FRONTEND=noninteractive "$root/tools/apt-get.sh" install -y -qq --no-install-recommends qemu-user-static >/dev/null
  fi
  install -m 0755 "$(command -v "qemu-$qarch-static")" "$rootfs/.qemu-$qarch-static"
  emu=("/.qemu-$qarch-static")
  echo "  linux/$arch on $host_arch: run under $(qemu-$qarch-static --version | head -1)"
fi
run_in_image() { env -i "${env[@]}" HOME=/home/nonroot chroot --userspec="$user" "$rootfs" "${emu[@]}" "$@"; }
vout=$(run_in_image /plantstore --version 2>&1) || true
echo "  /plantstore --version: $vout"
if [[ $vout == "plantstore $version (revision $revision, go"* ]]; then
  pass "--version reports the labels' version and revision"
else
  fail "--version does not report version $version and revision $revision"
fi
if [ -n "${EXPECT_VERSION:-}" ] && [[ $vout != "plantstore $EXPECT_VERSION "* ]]; then fail "--version is not EXPECT_VERSION $EXPECT_VERSION"; fi

step "the service, started from the image's root filesystem as the image's user"
# Port 0: the service binds what the kernel gives it and logs the address
# ("API listening", "admin listening"), so no port is chosen and closed here.
# Started directly (not through a function) so that $! is the server: env
# and chroot exec it, and the signal below reaches it.
env -i "${env[@]}" HOME=/home/nonroot chroot --userspec="$user" "$rootfs" "${emu[@]}" \
  /plantstore --dev --http-addr 127.0.0.1:0 --admin-addr 127.0.0.1:0 >"$work/serve.log" 2>&1 &
server_pid=$!
# listening NAME: the address the log says NAME listens on.
listening() { sed -n "s/.*$1 listening.*\"addr\": *\"\([^\"]*\)\".*/\1/p" "$work/serve.log" | head -n 1; }
ready='' api='' admin=''
for _ in $(seq 1 300); do
  api=$(listening API) admin=$(listening admin)
  if [ -n "$api" ] && [ -n "$admin" ] && curl -fsS -o /dev/null "http://$admin/readyz" 2>/dev/null; then ready=1; break; fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -n "$ready" ]; then
  pass "serves: GET /readyz on the admin port is 200 (embedded store, --dev, API on $api, admin on $admin)"
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://$admin/livez" || true)
  if [ "$code" = 200 ]; then pass "GET /livez is 200"; else fail "GET /livez is $code"; fi
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d '{}' "http://$api/plants" || true)
  if [ "$code" = 401 ]; then pass "the API port answers POST /plants without a token with 401"; else fail "POST /plants without a token gave $code, want 401"; fi
else
  fail "the server did not become ready; its output:"; sed 's/^/    /' "$work/serve.log" | tail -20
fi
kill -TERM "$server_pid" 2>/dev/null || true
status=0
wait "$server_pid" || status=$?
server_pid=
if [ "$status" = 0 ]; then pass "exits 0 on SIGTERM"; else fail "exit status $status on SIGTERM"; fi

if command -v skopeo >/dev/null 2>&1; then
  step "cross-check with skopeo"
  sd=$(skopeo inspect "oci-archive:$IMAGE" 2>/dev/null | jq -r .Digest || true)
  if [ "$sd" = "$manifest_digest" ]; then pass "skopeo reads the archive: digest $sd"; else fail "skopeo reads digest '$sd'"; fi
fi

step "done"
echo
if [ "$fails" -gt 0 ]; then
  echo "verify: $fails check(s) failed for $IMAGE ($manifest_digest)" >&2
  exit 1
fi
echo "verify: all checks passed for $IMAGE ($manifest_digest)"
