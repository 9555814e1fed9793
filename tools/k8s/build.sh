#!/usr/bin/env bash
# Builds the Kubernetes tools of this module (tools/k8s/go.mod) that are not
# built yet into one cache directory, keyed by go.mod, go.sum, the link flags
# and the Go version, and prints that directory on its last line. validate.sh
# and cluster.sh share it, so a machine builds each tool once.
#
#   tools/k8s/build.sh [--prebuild] TOOL...   TOOL: a name of PKG or OWN below
#
# --prebuild: a build in the background, of tools a run will ask for later;
# it exits at once when another prebuild is under way (.ci/run's, which
# builds them all, before test-cluster's of the later scenarios' tools).
#
# Environment: K8S_TOOLS_CACHE (default ${XDG_CACHE_HOME:-/tmp}/plantstore-k8s).
set -euo pipefail
MOD=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${K8S_TOOLS_CACHE:-${XDG_CACHE_HOME:-/tmp}/plantstore-k8s}
K8S_VERSION=1.31.0
export GOWORK=off
if [[ ${1:-} == --prebuild ]]; then
  shift
  mkdir -p "$CACHE"
  exec {prebuild}>"$CACHE/.prebuild.lock"
  flock -n "$prebuild" || { echo "build: another prebuild is under way" >&2; exit 0; }
fi

declare -A PKG=(
  [helm]=helm.sh/helm/v3/cmd/helm
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [kubeadm]=k8s.io/kubernetes/cmd/kubeadm
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubelet]=k8s.io/kubernetes/cmd/kubelet
  [kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
)

# Version stamps, as the projects' own release builds set them: helm's
# defaults (Capabilities.KubeVersion, lint deprecations) would say 1.20.
HELM_VERSION=$(cd "$MOD" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
# No debug information: nothing here is run under a debugger, and DWARF is a
# fifth of the compile (k8s.io/api: 131 CPU-seconds with it, 102 without)
# and more of the link. GCFLAGS is part of every package's build, so that
# make test-monitoring's promtool (built here too) and Prometheus share them.
GCFLAGS=all=-dwarf=false
LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=31"
LDFLAGS+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
LDFLAGS+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=31"
LDFLAGS+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=31"
# Tools in modules of their own: directory and package; then "static" (no
# cgo) for those that run in an image FROM scratch and for every tool of a
# module that builds several (one set of flags, so that they share every
# compiled package), and link flags of their own (the version stamp their
# releases carry; keep it in step with the go.mod). Tools built against the
# same client-go minor share a module (client-go-0.NN): the Kubernetes
# libraries and what else they share compile once for them.
declare -A OWN=(
  [coredns]="coredns ."
  [metrics-server]="metrics-server sigs.k8s.io/metrics-server/cmd/metrics-server"
  [skaffold]="client-go-0.33 github.com/GoogleContainerTools/skaffold/v2/cmd/skaffold static"
  [kube-router]="kube-router github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
  [helm4]="helm4 helm.sh/helm/v4/cmd/helm cgo -X helm.sh/helm/v4/internal/version.version=v4.3.1"
  [prometheus]="client-go-0.32 github.com/prometheus/prometheus/cmd/prometheus static -X github.com/prometheus/common/version.Version=3.5.0"
  # promtool for make test-monitoring's alert tests: the same module and flags as
  # Prometheus, so the two share every compiled package.
  [promtool]="client-go-0.32 github.com/prometheus/prometheus/cmd/promtool static -X github.com/prometheus/common/version.Version=3.5.0"
  [prometheus-operator]="client-go-0.33 github.com/prometheus-operator/prometheus-operator/cmd/operator static -X github.com/prometheus/common/version.Version=0.85.0"
  [prometheus-config-reloader]="client-go-0.33 github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader static -X github.com/prometheus/common/version.Version=0.85.0"
  [policy-controller]="client-go-0.32 github.com/sigstore/policy-controller/cmd/webhook static"
  # Jaeger v2 from its v1.76.0 module, the commit its v2.13.0 release is built from,
  # with the components config.yaml runs (PATCH).
  [jaeger]="jaeger github.com/jaegertracing/jaeger/cmd/jaeger static -X github.com/jaegertracing/jaeger/internal/version.latestVersion=v2.13.0"
  [otelcol]="client-go-0.36 ./otelcol static"
  # Flux's controllers, static as Flux's own images.
  [source-controller]="client-go-0.36 github.com/fluxcd/source-controller static"
  [helm-controller]="client-go-0.36 github.com/fluxcd/helm-controller static"
  # Traefik v3.6 as the test cluster's Gateway API implementation (v3.7 cannot be built
  # here: the DNS-provider modules its ACME client pulls in are not served), with
  # client-go-0.34/acmedns in place of those providers' registry (PATCH).
  [traefik]="client-go-0.34 github.com/traefik/traefik/v3/cmd/traefik static -X github.com/traefik/traefik/v3/pkg/version.Version=3.6.12"
  # The release tools of tools/release/build.sh (make release) but CNCF
  # Distribution's registry, whose gorilla/mux Traefik's go.mod replaces by a fork.
  [cosign]="client-go-0.34 github.com/sigstore/cosign/v2/cmd/cosign static"
  [crane]="client-go-0.34 github.com/google/go-containerregistry/cmd/crane static"
  [cyclonedx-gomod]="client-go-0.34 github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod static"
  # The chart's optional Redis exporter (redis.metrics): its v1.61.0 release, stamped as its release build is.
  [redis-exporter]="redis-exporter github.com/oliver006/redis_exporter static -X main.BuildVersion=v1.61.0 -X main.BuildCommitSha=e9871c1465679cd3543953f57bd4d015bc73c990 -X main.BuildDate=2024-06-09T17:23:45Z"
)
# Tools built with one file of a module they use replaced by one of ours:
# TOOL="MODULE OURS THEIRS", OURS in the tool's directory, THEIRS in MODULE.
# Each file replaced is a registry that imports what the test cluster never
# uses: lego's DNS-01 providers and their cloud SDKs, a third of Traefik's
# source (the cluster's certificates are its own, never an ACME CA's);
# Jaeger's collector components (Kafka, Zipkin, cloud auth, ...), a quarter
# of its source (the cluster's Jaeger takes OTLP and keeps traces in memory).
declare -A PATCH=(
  [traefik]="github.com/go-acme/lego/v4 acmedns/providers.go providers/dns/zz_gen_dns_providers.go"
  [jaeger]="github.com/jaegertracing/jaeger _components/components.go cmd/jaeger/internal/components.go"
)
key=$( { cat "$MOD/go.mod" "$MOD/go.sum"; echo "$LDFLAGS $GCFLAGS"; go env GOVERSION; } | sha256sum | cut -c1-16)
BIN=$CACHE/bin/$key
mkdir -p "$BIN" "$CACHE/own"
# A tool in a module of its own is cached by that module's files alone (a
# new such module does not rebuild the others) and linked into BIN
# (atomically: a concurrent run may link the same).
own_path() {
  local dir pkg flags src=()
  read -r dir pkg flags <<<"${OWN[$1]}"
  [[ $pkg != .* ]] || src=("$MOD/$dir/$pkg"/*.go) # a main package of our own
  [[ -z ${PATCH[$1]:-} ]] || src+=("$MOD/$dir/$(cut -d' ' -f2 <<<"${PATCH[$1]}")")
  echo "$CACHE/own/$1-$( { cat "$MOD/$dir"/go.mod "$MOD/$dir"/go.sum "${src[@]}" 2>/dev/null; echo "$LDFLAGS $GCFLAGS"; [[ -z $flags ]] || echo "$flags"; go env GOVERSION; } | sha256sum | cut -c1-16)"
}
link_own() { ln -sfn "$(own_path "$1")/$1" "$BIN/.$1.$$" && mv -Tf "$BIN/.$1.$$" "$BIN/$1"; }

# plan sets missing (packages of the main module to build) and own (tools
# of modules of their own to build), linking those already built into BIN.
plan() {
  missing=() own=()
  local t
  for t in "$@"; do
    if [[ -n ${OWN[$t]:-} ]]; then
      if [[ -x $(own_path "$t")/$t ]]; then link_own "$t"; else own+=("$t"); fi
      continue
    fi
    [[ -x $BIN/$t ]] && continue
    [[ -n ${PKG[$t]:-} ]] || { echo "build: unknown tool $t" >&2; exit 2; }
    missing+=("${PKG[$t]}")
  done
}

# Concurrent runs share the cache. Each build unit (the one go build of this
# module's tools, and each tool of a module of its own) has a lock of its
# own, taken only when that unit is missing: a run waits only for a build
# of a tool it asked for, not for another run's whole list (.ci/run builds
# every tool in the background while the stages ask for theirs).
# cpu: the CPU-seconds of this shell's finished children, for the build lines.
cpu() {
  local u s
  read -r u s < <(cut -d' ' -f16,17 "/proc/$$/stat") # cutime, cstime: USER_HZ (100) ticks
  echo $(((u + s) / 100))
}
# locked NAME CMD...: run CMD holding the lock of unit NAME.
locked() {
  local name=$1 fd; shift
  command -v flock >/dev/null || { "$@"; return; }
  exec {fd}>"$CACHE/.build-$name.lock"
  flock -w 3600 "$fd" || { echo "build: could not lock $CACHE/.build-$name.lock" >&2; exit 1; }
  "$@"
  exec {fd}>&-
}
# timed WHAT CMD...: CMD between "build: WHAT" and "build: done in ...", on
# stderr (stdout is for BIN's line).
timed() {
  local t0=$SECONDS c0
  c0=$(cpu)
  echo "build: $1" >&2
  "${@:2}" >&2
  echo "build: done in $((SECONDS - t0))s, $(($(cpu) - c0)) CPU-s" >&2
}
build_main() {
  local t todo=()
  for t in "${requested[@]}"; do # what a build we may have waited for left to do
    [[ -z ${PKG[$t]:-} || -x $BIN/$t ]] || todo+=("${PKG[$t]}")
  done
  ((${#todo[@]})) || return 0
  # Without -trimpath: make test's chart tests (tools/k8s/chart) and
  # validate.sh's helpers compile the same Helm and Kubernetes packages with
  # the same flags, so whichever comes first compiles them for the others.
  timed "${todo[*]##*/} (one go build: they share most packages)" \
    go -C "$MOD" build -gcflags "$GCFLAGS" -ldflags "$LDFLAGS" -o "$BIN/" "${todo[@]}"
}
# patched_modfile TOOL DIR WORK: a go.mod, written into WORK, for DIR's
# module with PATCH's module replaced by a copy holding our file. Go's
# -overlay cannot replace a file under GOMODCACHE, hence the copy. WORK is
# emptied first (a failed build leaves it behind).
patched_modfile() {
  local dir=$2 work=$3 module ours theirs src
  read -r module ours theirs <<<"${PATCH[$1]}"
  go -C "$dir" mod download "$module"
  src=$(go -C "$dir" list -m -f '{{.Dir}}' "$module")
  rm -rf "$work" && mkdir -p "$work" && cp -R "$src" "$work/module" && chmod -R u+w "$work/module"
  cp "$dir/$ours" "$work/module/$theirs"
  cp "$dir/go.mod" "$dir/go.sum" "$work/"
  go -C "$dir" mod edit -modfile="$work/go.mod" -replace="$module=$work/module"
  echo "$work/go.mod"
}
build_own() {
  local t=$1 dir pkg static flags out cgo modfile=()
  read -r dir pkg static flags <<<"${OWN[$t]}"
  out=$(own_path "$t")
  if [[ ! -x $out/$t ]]; then
    cgo=$(go env CGO_ENABLED)
    [[ $static != static ]] || cgo=0
    [[ -z ${PATCH[$t]:-} ]] || modfile=(-modfile "$(patched_modfile "$t" "$MOD/$dir" "$out.src")")
    timed "$t (tools/k8s/$dir)" env CGO_ENABLED="$cgo" \
      go -C "$MOD/$dir" build "${modfile[@]}" -trimpath -gcflags "$GCFLAGS" -ldflags "$LDFLAGS $flags" -o "$out/$t" "$pkg"
    rm -rf "$out.src"
  fi
  link_own "$t"
}
requested=("$@")
plan "$@"
if ((${#missing[@]})); then
  locked main build_main
fi
for t in "${own[@]}"; do
  locked "$t" build_own "$t"
done
# Builds for other go.mod/flag versions are stale: drop those unused for a
# day (~1 GB each; a running cluster may still use a recent one).
touch "$BIN"
find "$CACHE/bin" -mindepth 1 -maxdepth 1 -type d ! -path "$BIN" -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
for t in "$@"; do [[ -L $BIN/$t ]] && touch "$(dirname "$(readlink "$BIN/$t")")"; done
find "$CACHE/own" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
echo "$BIN"
