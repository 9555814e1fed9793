#!/usr/bin/env bash
# Builds the images the test cluster runs besides plantstore's own, without a
# daemon or a registry, from Debian's binaries and this module's commands,
# and writes each as an OCI archive into OUTDIR, printing "REF<TAB>ARCHIVE"
# (tools/k8s/cluster.sh imports them into the nodes' containerds). The tools
# built from modules of their own (tools/k8s/NAME) run as their official
# images run them: FROM scratch, as the same user.
#
# Usage: tools/k8s/images.sh OUTDIR BINDIR [GROUP...]
#   GROUP: base (pause, redis, client, load, webhook-receiver), exporter
#   (redis_exporter), gateway (traefik), tracing (jaeger, otelcol),
#   prometheus (prometheus, prometheus-operator, prometheus-config-reloader);
#   default all. cluster.sh imports base at up and each other group when a
#   scenario first needs it (cluster.sh images GROUP).
#   BINDIR holds the static k8s-pause, k8s-load and k8s-webhook-receiver binaries and
#   the static binaries of the groups asked for.
# Needs root and buildah, busybox-static, redis-server and curl from Debian
# (cluster.sh installs them).
set -euo pipefail
OUT=${1:?usage: images.sh OUTDIR BINDIR}
BINDIR=${2:?usage: images.sh OUTDIR BINDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
shift 2
GROUPS_WANTED=" ${*:-base exporter gateway tracing prometheus} "
want() { [[ $GROUPS_WANTED == *" $1 "* ]]; }

work=$(mktemp -d /tmp/plantstore-test-images.XXXXXX)
B=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
cleanup() {
  "${B[@]}" rm --all >/dev/null 2>&1 || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
export BUILDAH_ISOLATION=chroot

# libs ROOTFS BIN...: copy each binary's shared libraries and the dynamic
# loader into ROOTFS at the same paths.
libs() {
  local root=$1 lib; shift
  for lib in $(ldd "$@" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*' | sort -u); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}

# busybox ROOTFS: /bin/busybox and a link for each applet a script here uses.
busybox() {
  local root=$1 a
  mkdir -p "$root/bin"
  cp /bin/busybox "$root/bin/busybox"
  for a in sh cat date echo grep head tr sleep ls printf test env wc cut sed id od awk true false nslookup wget timeout; do
    ln -sf busybox "$root/bin/$a"
  done
  mkdir -p "$root/usr/bin" && ln -sf ../../bin/sh "$root/usr/bin/sh"
}

# users ROOTFS NAME UID: /etc/passwd and /etc/group with root and NAME.
users() {
  mkdir -p "$1/etc" "$1/tmp"
  chmod 1777 "$1/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\n%s:x:%s:%s:%s:/home/%s:/sbin/nologin\n' "$2" "$3" "$3" "$2" "$2" >"$1/etc/passwd"
  printf 'root:x:0:\n%s:x:%s:\n' "$2" "$3" >"$1/etc/group"
}

# static NAME USER UID BIN [FILE]: in r, the root filesystem $work/NAME of
# user USER (UID) with the static $BINDIR/BIN at /FILE (default /BIN).
static() {
  r=$work/$1
  users "$r" "$2" "$3"
  mkdir -p "$(dirname "$r/${5:-$4}")"
  install -m 0755 "$(readlink -f "$BINDIR/$4")" "$r/${5:-$4}"
}

# image REF ROOTFS USER ENTRYPOINT_JSON: commit ROOTFS as REF into OUT.
image() {
  local ref=$1 root=$2 user=$3 entry=$4 ctr mnt file
  ctr=$("${B[@]}" from --pull=never scratch)
  mnt=$("${B[@]}" mount "$ctr")
  cp -a "$root/." "$mnt/"
  "${B[@]}" umount "$ctr" >/dev/null
  "${B[@]}" config --user "$user" --os linux --arch "$(go env GOARCH)" \
    --env PATH=/usr/local/bin:/usr/bin:/bin --entrypoint "$entry" \
    --created-by "tools/k8s/images.sh" "$ctr"
  file=$OUT/$(echo "$ref" | tr '/:' '__').tar
  rm -f "$file"
  "${B[@]}" commit --quiet --rm --format oci --identity-label=false --timestamp 0 \
    "$ctr" "oci-archive:$file:$ref" >/dev/null
  printf '%s\t%s\n' "$ref" "$file"
}

if want base; then
# The pod sandbox.
r=$work/pause
mkdir -p "$r"
install -m 0755 "$BINDIR/k8s-pause" "$r/pause"
image plantstore.test/pause:1 "$r" 65535:65535 '["/pause"]'

# Debian's Redis with a shell and grep for the chart's probes, as user
# redis 999 like the official image.
r=$work/redis
busybox "$r"
users "$r" redis 999
mkdir -p "$r/usr/bin" "$r/data" "$r/etc/redis"
chown 999:999 "$r/data"
install -m 0755 "$(readlink -f /usr/bin/redis-server)" "$r/usr/bin/redis-server"
install -m 0755 "$(readlink -f /usr/bin/redis-cli)" "$r/usr/bin/redis-cli"
libs "$r" /usr/bin/redis-server /usr/bin/redis-cli
image plantstore.test/redis:7.0 "$r" 999:999 '["redis-server"]'

# A shell, curl and the usual utilities, for helm test and the scenarios' probes.
r=$work/client
busybox "$r"
users "$r" nonroot 65532
mkdir -p "$r/usr/bin" "$r/etc/ssl/certs"
install -m 0755 "$(readlink -f /usr/bin/curl)" "$r/usr/bin/curl"
libs "$r" /usr/bin/curl
cp -L /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/" 2>/dev/null || true
image plantstore.test/client:1 "$r" 65532:65532 '["/bin/sh"]'

# The open-loop load generator and the scenarios' webhook subscriber.
static load nonroot 65532 k8s-load
image plantstore.test/load:1 "$r" 65532:65532 '["/k8s-load"]'
static webhook-receiver nonroot 65532 k8s-webhook-receiver
image plantstore.test/webhook-receiver:1 "$r" 65532:65532 '["/k8s-webhook-receiver"]'
fi

# The Prometheus scenario's (cluster-test.d/35-prometheus.sh): Prometheus and
# the Prometheus Operator with its config reloader (tags as build.sh stamps
# them), user nobody, /prometheus the data directory.
if want prometheus; then
static prometheus nobody 65534 prometheus bin/prometheus
mkdir -p "$r/prometheus" "$r/etc/prometheus"
chown 65534:65534 "$r/prometheus"
image plantstore.test/prometheus:v3.5.0 "$r" 65534:65534 '["/bin/prometheus"]'

for t in prometheus-operator:operator prometheus-config-reloader:prometheus-config-reloader; do
  static "${t%%:*}" nobody 65534 "${t%%:*}" "bin/${t#*:}"
  image "plantstore.test/${t%%:*}:v0.85.0" "$r" 65534:65534 "[\"/bin/${t#*:}\"]"
done
fi

# The tracing scenarios' (cluster-test.d/lib/observability.sh): Jaeger v2 and
# the OpenTelemetry Collector, as user 10001.
if want tracing; then
for t in jaeger otelcol; do
  static "$t" "$t" 10001 "$t"
  image "plantstore.test/$t:1" "$r" 10001:10001 "[\"/$t\"]"
done
fi

# The Gateway scenario's (cluster-test.d/lib/gateway.sh): Traefik, as user 65532.
if want gateway; then
static traefik traefik 65532 traefik
image plantstore.test/traefik:1 "$r" 65532:65532 '["/traefik"]'
fi

# The chart's Redis exporter (/redis_exporter, user 59000), named as the
# chart's default so that the scenarios enable redis.metrics without
# overriding its image.
if want exporter; then
static redis-exporter exporter 59000 redis-exporter redis_exporter
image docker.io/oliver006/redis_exporter:v1.61.0 "$r" 59000:59000 '["/redis_exporter"]'
fi
