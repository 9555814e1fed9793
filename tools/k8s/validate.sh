#!/usr/bin/env bash
# Offline validation of the Helm chart and the kustomize overlays against
# Kubernetes 1.31, with no cluster and no download at test time other than Go
# modules (and Debian's etcd-server package when etcd is missing).
# See docs/validation.md for what this proves and what it cannot.
#
# Usage (from anywhere; paths are relative to the repository root):
#   tools/k8s/validate.sh [--no-cluster]
#
# Environment:
#   K8S_VALIDATE_CACHE    cache for tools, schemas and rendered manifests
#                         (default ${XDG_CACHE_HOME:-/tmp}/plantstore-k8s)
#   K8S_VALIDATE_TIMEOUT  bound of the whole run in seconds, first builds
#                         included (default 3600)
#   K8S_VALIDATE_ROOT     directory holding charts/ and k8s/ (default: repo root)
#   K8S_VALIDATE_CHART    chart directory (default charts/plantstore)
#   K8S_VALIDATE_OVERLAYS directory of overlays (default k8s/overlays)
#   K8S_VALIDATE_KEEP=1   keep the temporary directory (API server logs, ...)
#   K8S_VALIDATE_NO_CLUSTER=1  same as --no-cluster: skip etcd/kube-apiserver
set -euo pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
TOOLS_MOD=$(dirname "$SELF")            # tools/k8s, its own Go module
REPO=$(cd "$TOOLS_MOD/../.." && pwd)

# Bound the whole run: re-exec under timeout(1), which signals the whole
# process group (this script, etcd, kube-apiserver, helm, kubectl) at the end.
if [[ -z ${_K8S_VALIDATE_BOUNDED:-} ]]; then
  export _K8S_VALIDATE_BOUNDED=1
  exec timeout -k 30 "${K8S_VALIDATE_TIMEOUT:-3600}" "$SELF" "$@"
fi

NO_CLUSTER=${K8S_VALIDATE_NO_CLUSTER:-0}
for a in "$@"; do
  case $a in
    --no-cluster) NO_CLUSTER=1 ;;
    -h|--help) sed -n '2,19p' "$SELF"; exit 0 ;;
    *) echo "unknown argument: $a" >&2; exit 2 ;;
  esac
done

K8S_VERSION=1.31.0
ROOT=$(cd "${K8S_VALIDATE_ROOT:-$REPO}" && pwd)
CHART=${K8S_VALIDATE_CHART:-charts/plantstore}
OVERLAYS=${K8S_VALIDATE_OVERLAYS:-k8s/overlays}
CACHE=${K8S_VALIDATE_CACHE:-${XDG_CACHE_HOME:-/tmp}/plantstore-k8s}
cd "$ROOT"

mkdir -p "$CACHE"
# In the network namespace (below) the run goes on in the directory it made.
WORK=${_K8S_VALIDATE_NETNS:-$(mktemp -d "${TMPDIR:-/tmp}/k8s-validate.XXXXXX")}
LOGS=$WORK/logs
RENDERED=$WORK/rendered   # copied to $CACHE/last-run/ at the end, for inspection
mkdir -p "$LOGS" "$RENDERED"

# Never talk to a real cluster: helm and kubectl only ever see our kubeconfig,
# and helm keeps its state in the temporary directory.
export KUBECONFIG=$WORK/kubeconfig
export HELM_CACHE_HOME=$WORK/helm/cache HELM_CONFIG_HOME=$WORK/helm/config HELM_DATA_HOME=$WORK/helm/data
unset HELM_KUBECONTEXT HELM_NAMESPACE HELM_KUBETOKEN HELM_KUBEAPISERVER KUBERNETES_SERVICE_HOST || true
export GOWORK=off

ETCD_PID='' API_PID=''
stop_pid() {
  local pid=$1
  [[ -n $pid ]] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM ERR
  stop_pid "$API_PID"
  stop_pid "$ETCD_PID"
  if [[ -d $RENDERED ]]; then
    rm -rf "$CACHE/last-run.$$" && cp -r "$RENDERED" "$CACHE/last-run.$$" &&
      rm -rf "$CACHE/last-run" && mv "$CACHE/last-run.$$" "$CACHE/last-run" || true
  fi
  if [[ ${K8S_VALIDATE_KEEP:-0} == 1 ]]; then
    echo "kept $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "validate.sh: line $LINENO: unexpected failure of: $BASH_COMMAND" >&2' ERR
trap 'echo "interrupted" >&2; exit 130' INT
trap 'echo "terminated (time bound K8S_VALIDATE_TIMEOUT reached?)" >&2; exit 143' TERM

read -r PASSED FAILED SKIPPED <<<"${_K8S_VALIDATE_COUNTS:-0 0 0}"
pass() { PASSED=$((PASSED + 1)); printf 'PASS  %s\n' "$1"; }
skip() { SKIPPED=$((SKIPPED + 1)); printf 'SKIP  %s\n' "$1"; }
fail() {
  FAILED=$((FAILED + 1)); printf 'FAIL  %s\n' "$1"
  if [[ -n ${2:-} && -s ${2:-} ]]; then tail -n "${3:-40}" "$2" | sed 's/^/      | /'; fi
}
note() { printf '      %s\n' "$*"; }
# summary: the last line, and the exit status.
summary() {
  echo "validate: $PASSED passed, $FAILED failed, $SKIPPED skipped"
  if ((FAILED)); then exit 1; fi
  exit 0
}
newlog() { mktemp -p "$LOGS" "${1:-log}.XXXXXX"; }
# check NAME CMD...: PASS if CMD exits 0, FAIL with the tail of its output otherwise.
check() {
  local name=$1 log; shift
  log=$(newlog)
  if "$@" >"$log" 2>&1; then pass "$name"; return 0; fi
  fail "$name" "$log"; return 1
}

# ---------------------------------------------------------------------------
# a. tools, in the first run only: their builds and packages need the network
CRDS=$WORK/crds
if [[ -z ${_K8S_VALIDATE_NETNS:-} ]]; then
  echo "== tools (cache $CACHE)"
  # Concurrent runs share the cache: build tools under a lock.
  if command -v flock >/dev/null; then
    exec 9>"$CACHE/.lock"
    flock -w 1800 9 || { echo "could not lock $CACHE/.lock" >&2; exit 1; }
  fi
  # Built once per machine, into the cache cluster.sh shares (build.sh).
  log=$(newlog build)
  t0=$SECONDS
  if BIN=$(K8S_TOOLS_CACHE=$CACHE "$TOOLS_MOD/build.sh" helm kubectl kube-apiserver kubeadm 2>"$log" | tail -n 1); then
    if grep -q '^build: done' "$log"; then pass "build $(sed -n 's/^build: \(.*\) (one go build.*/\1/p' "$log") ($((SECONDS - t0))s)"
    else pass "tools cached in $BIN"; fi
  else
    fail "build helm kubectl kube-apiserver kubeadm" "$log"
    summary
  fi
  # Our small helpers are rebuilt each time (seconds, from Go's build cache;
  # without -trimpath, as build.sh builds Helm: they share its packages).
  HELPERS=(k8s-pod-templates k8s-existing-secrets)
  check "build ${HELPERS[*]}" bash -c "cd '$TOOLS_MOD' && go build -o '$WORK/bin/' ${HELPERS[*]/#/./cmd/}" ||
    summary
  export PATH=$BIN:$WORK/bin:$PATH
  note "$(helm version --short) / kubectl $(kubectl version --client -o json | sed -n 's/.*"gitVersion": "\(.*\)".*/\1/p' | head -1)"

  # etcd for the API server; envsubst for tools/k8s/node/kubeadm.yaml.
  declare -A DEBS=([etcd]=etcd-server [envsubst]=gettext-base)
  MISSING=()
  for c in "${!DEBS[@]}"; do command -v "$c" >/dev/null || MISSING+=("${DEBS[$c]}"); done
  if [[ $NO_CLUSTER != 1 ]] && ((${#MISSING[@]})); then
    log=$(newlog apt)
    SUDO=''; [[ $(id -u) == 0 ]] || SUDO='sudo -n'
    if { $SUDO "$REPO/tools/apt-get.sh" update && DEBIAN_FRONTEND=noninteractive $SUDO "$REPO/tools/apt-get.sh" install -y --no-install-recommends "${MISSING[@]}"; } >"$log" 2>&1 \
      && command -v etcd >/dev/null && command -v envsubst >/dev/null; then
      pass "apt-get install ${MISSING[*]}"
    else
      fail "apt-get install ${MISSING[*]} (needs root or passwordless sudo)" "$log"
    fi
  fi

  # The CRDs of the custom resources the chart renders, for the API server.
  log=$(newlog crds)
  if "$TOOLS_MOD/crds.sh" "$CRDS" >"$log" 2>&1; then
    pass "CRDs from their modules: $(cd "$CRDS" && echo *.yaml)"
  else
    fail "the CRDs of ServiceMonitor, PrometheusRule and HTTPRoute (tools/k8s/crds.sh)" "$log"
  fi
  # Readers keep the lock shared, so that no other run rebuilds under them.
  if command -v flock >/dev/null; then flock -s 9; fi
fi

# The rest needs no network. etcd and kube-apiserver cannot bind port 0 and
# say which port they got, so they listen on fixed ports of loopback in a
# network namespace of this run's own, which no other process can take them
# in: the run goes on in it, made by a user namespace (no root needed).
if [[ $NO_CLUSTER != 1 && -z ${_K8S_VALIDATE_NETNS:-} ]]; then
  if unshare --user --map-root-user --net true 2>/dev/null && command -v ip >/dev/null; then
    trap - EXIT # the run in the namespace cleans up
    export _K8S_VALIDATE_NETNS=$WORK _K8S_VALIDATE_COUNTS="$PASSED $FAILED $SKIPPED" PATH
    exec unshare --user --map-root-user --net bash -c 'ip link set lo up && exec "$0" "$@"' "$SELF" "$@"
  fi
  NO_CLUSTER=1 NO_CLUSTER_WHY="no network namespace of our own: unshare --user --net needs unprivileged user namespaces or root, and ip(8)"
  [[ ${CI:-} != true ]] || fail "kube-apiserver checks: $NO_CLUSTER_WHY"
fi

# ---------------------------------------------------------------------------
# b-d. chart
LINT=(helm lint --strict --kube-version "$K8S_VERSION" "$CHART")
TEMPLATE=(helm template plantstore "$CHART" --kube-version "$K8S_VERSION" --api-versions monitoring.coreos.com/v1
  --api-versions monitoring.coreos.com/v1/ServiceMonitor --api-versions monitoring.coreos.com/v1/PrometheusRule)
SETS=()
if [[ -f $CHART/Chart.yaml ]]; then
  echo "== chart $CHART"
  check "helm lint --strict $CHART" "${LINT[@]}" || true
  shopt -s nullglob
  for v in "$CHART"/ci/*-values.yaml; do SETS+=("$(basename "$v" -values.yaml)"); done
  ((${#SETS[@]})) || fail "no value sets in $CHART/ci/*-values.yaml"
  for s in "${SETS[@]}"; do
    vf=$CHART/ci/$s-values.yaml
    check "helm lint --strict -f ci/$s-values.yaml" "${LINT[@]}" -f "$vf" || true
    log=$(newlog template)
    if "${TEMPLATE[@]}" -n "vs-$s" -f "$vf" >"$RENDERED/helm-$s.yaml" 2>"$log"; then
      pass "helm template -f ci/$s-values.yaml ($(grep -c '^kind:' "$RENDERED/helm-$s.yaml") objects, hooks included: $(grep -c '^    helm.sh/hook:' "$RENDERED/helm-$s.yaml" || true))"
    else
      fail "helm template -f ci/$s-values.yaml" "$log"
    fi
  done
  invalid=("$CHART"/ci/invalid/*.yaml)
  ((${#invalid[@]})) || skip "no negative cases in $CHART/ci/invalid/"
  for f in "${invalid[@]}"; do
    b=invalid/$(basename "$f")
    expect=$(head -n 1 "$f" | sed -n 's/^#[[:space:]]*expect:[[:space:]]*//p' | sed 's/[[:space:]]*$//')
    if [[ -z $expect ]]; then fail "$b: first line must be '# expect: <substring of the error>'"; continue; fi
    for cmd in lint template; do
      log=$(newlog neg)
      if [[ $cmd == lint ]]; then run=("${LINT[@]}"); else run=("${TEMPLATE[@]}"); fi
      "${run[@]}" -f "$f" >"$log" 2>&1 && rc=0 || rc=$?
      if ((rc == 0)); then
        fail "$b: helm $cmd succeeded; expected an error containing '$expect'" "$log" 10
      elif grep -qF -- "$expect" "$log"; then
        pass "$b: helm $cmd fails with '$expect'"
      else
        fail "$b: helm $cmd failed but without '$expect'" "$log" 15
      fi
    done
  done
  shopt -u nullglob
else
  fail "no chart at $ROOT/$CHART"
fi

# ---------------------------------------------------------------------------
# e. kustomize overlays
OVLS=()
echo "== overlays $OVERLAYS"
shopt -s nullglob
for d in "$OVERLAYS"/*/; do
  d=${d%/}
  [[ -f $d/kustomization.yaml || -f $d/kustomization.yml || -f $d/Kustomization ]] || continue
  o=$(basename "$d")
  OVLS+=("$o")
  log=$(newlog kustomize)
  if kubectl kustomize "$d" >"$RENDERED/kustomize-$o.yaml" 2>"$log"; then
    pass "kubectl kustomize $d ($(grep -c '^kind:' "$RENDERED/kustomize-$o.yaml") objects)"
  else
    fail "kubectl kustomize $d" "$log"
  fi
done
shopt -u nullglob
((${#OVLS[@]})) || fail "no kustomize overlays in $ROOT/$OVERLAYS"

# ---------------------------------------------------------------------------
# f. a real kube-apiserver with etcd on loopback
if [[ $NO_CLUSTER == 1 ]]; then
  [[ ${CI:-} == true && -n ${NO_CLUSTER_WHY:-} ]] || skip "kube-apiserver checks (${NO_CLUSTER_WHY:---no-cluster})"
  summary
fi

echo "== kube-apiserver $K8S_VERSION + etcd on 127.0.0.1 (the run's own network namespace)"
cluster_up() {
  local etcd_port=2379 peer_port=2380 api_port=6443 kube_version svc_cidr=10.96.0.0/16
  # Certificates and the admin's kubeconfig as the cluster's (cluster.sh),
  # from the same kubeadm configuration, for an API server on loopback.
  # kubeadm refuses a loopback advertise address: NODE_IP is one of
  # TEST-NET-1 that nothing uses, API_ENDPOINT where kubectl connects.
  kube_version=$(kubeadm version -o short) || return 1
  # shellcheck disable=SC2016 # the ${...} are envsubst's
  (export DIR=$WORK NODE_NAME=validate NODE_IP=192.0.2.1 API_SECURE_PORT=$api_port \
    API_ENDPOINT=127.0.0.1:$api_port ETCD_URL=http://127.0.0.1:$etcd_port SVC_CIDR=$svc_cidr \
    KUBE_VERSION=$kube_version &&
    envsubst '${DIR} ${NODE_NAME} ${NODE_IP} ${API_SECURE_PORT} ${API_ENDPOINT} ${ETCD_URL} ${SVC_CIDR} ${KUBE_VERSION}' \
      <"$TOOLS_MOD/node/kubeadm.yaml" >"$WORK/kubeadm.yaml") || return 1
  if grep -o '[$][{][^}]*}' "$WORK/kubeadm.yaml"; then echo "node/kubeadm.yaml names the above, not set here"; return 1; fi
  kubeadm init phase certs all --config "$WORK/kubeadm.yaml" || return 1
  kubeadm init phase kubeconfig admin --config "$WORK/kubeadm.yaml" --kubeconfig-dir "$WORK/pki" || return 1
  cp "$WORK/pki/admin.conf" "$KUBECONFIG"
  etcd --name validate --data-dir "$WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "validate=http://127.0.0.1:$peer_port" \
    >"$WORK/etcd.log" 2>&1 &
  ETCD_PID=$!
  local i
  # Up to a minute: .ci/run runs this beside the cluster's scenarios at nice 19.
  for i in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$etcd_port") 2>/dev/null && break
    kill -0 "$ETCD_PID" 2>/dev/null || { echo "etcd exited"; tail -n 20 "$WORK/etcd.log"; return 1; }
    sleep 0.2
  done
  kube-apiserver \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --tls-cert-file="$WORK/pki/apiserver.crt" --tls-private-key-file="$WORK/pki/apiserver.key" \
    --client-ca-file="$WORK/pki/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$WORK/pki/sa.pub" --service-account-signing-key-file="$WORK/pki/sa.key" \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --authorization-mode=AlwaysAllow --anonymous-auth=false \
    --enable-admission-plugins=PodSecurity \
    --service-cluster-ip-range="$svc_cidr" --endpoint-reconciler-type=none \
    --cert-dir="$WORK/apiserver-certs" --profiling=false \
    >"$WORK/kube-apiserver.log" 2>&1 &
  API_PID=$!
  for i in $(seq 240); do
    if kubectl get --raw=/readyz >/dev/null 2>&1; then
      echo "ready after $((i / 2))s on https://127.0.0.1:$api_port (etcd 127.0.0.1:$etcd_port)"
      return 0
    fi
    kill -0 "$API_PID" 2>/dev/null || { echo "kube-apiserver exited"; tail -n 30 "$WORK/kube-apiserver.log"; return 1; }
    sleep 0.5
  done
  echo "kube-apiserver not ready after 120s"; tail -n 30 "$WORK/kube-apiserver.log"; return 1
}
log=$(newlog cluster)
if ! cluster_up >"$log" 2>&1; then
  fail "start etcd + kube-apiserver" "$log"
  summary
fi
pass "start etcd $(etcd --version | sed -n 's/^etcd Version: //p') + kube-apiserver $(kubectl version -o json 2>/dev/null | grep -A8 serverVersion | sed -n 's/.*"gitVersion": "\(.*\)".*/\1/p'): $(tail -n 1 "$log")"
KC=(kubectl --request-timeout=30s)
# Fail fast, not request by request, if etcd or kube-apiserver dies.
cluster_alive() {
  local who pid
  for who in "etcd $ETCD_PID" "kube-apiserver $API_PID"; do
    read -r who pid <<<"$who"
    if ! kill -0 "$pid" 2>/dev/null; then
      fail "$who died during the run" "$WORK/$who.log" 20
      summary
    fi
  done
}

if compgen -G "$CRDS/*.yaml" >/dev/null; then
  check "install CRDs $(cd "$CRDS" && echo *.yaml)" \
    bash -c "kubectl create -f '$CRDS/' && kubectl wait --for=condition=Established --timeout=60s crd --all" || true
else
  fail "no CRDs: ServiceMonitor, PrometheusRule and HTTPRoute cannot be installed"
fi

# pods FROM_FILE SOURCE: write a Pod per pod template into $WORK/pods/SOURCE.
declare -a POD_LIST=()
collect_pods() {
  local file=$1 src=$2 line log
  log=$(newlog pods)
  if ! k8s-pod-templates "$WORK/pods/$src" <"$file" >"$log" 2>&1; then
    fail "pod templates of $src" "$log"; return
  fi
  while IFS= read -r line; do POD_LIST+=("$src"$'\t'"$line"); done <"$log"
}

# api_warnings LOG: true if the API server sent warnings (unknown or duplicate
# fields, deprecated APIs, PodSecurity "would violate"); helm only logs them.
api_warnings() {
  grep -E 'warnings\.go:[0-9]+\]|^Warning: ' "$1" >"$1.warnings"
}
# unwarned LOG WARNED PASSED: after a command that succeeded, FAIL WARNED
# with the API server's warnings in LOG, or PASS PASSED.
unwarned() {
  if api_warnings "$1"; then fail "$2" "$1.warnings"; else pass "$3"; fi
}

# hooks_check SET NAMESPACE WHEN: helm installs and upgrades with --no-hooks
# here (with no controllers a hook Job never completes, and helm would wait
# until --timeout), so the release's hooks, test hooks included, get a
# server-side dry-run create in its namespace instead. Their pod templates
# are in the rendered manifests, judged by the Pod Security check below.
hooks_check() {
  local s=$1 ns=$2 when=$3 file log n
  file=$RENDERED/hooks-$s-$when.yaml log=$(newlog hooks)
  if ! helm get hooks plantstore -n "$ns" >"$file" 2>"$log"; then
    fail "$s: helm get hooks after the $when" "$log"; return
  fi
  n=$(grep -c '^kind:' "$file" || true)
  if ((n == 0)); then note "$s: the $when has no hooks"; return; fi
  if "${KC[@]}" create --dry-run=server -n "$ns" -f "$file" >"$log" 2>&1; then
    unwarned "$log" "$s: hooks of the $when: dry-run create admitted, but the API server warned" \
      "$s: the $when's $n hooks pass a server-side dry-run create ($(sed -n 's/ created (server dry run)$//p' "$log" | paste -sd' ' -))"
  else
    fail "$s: hooks of the $when: server-side dry-run create failed" "$log"
  fi
}

# helm install of every value set, each into its own namespace.
for s in "${SETS[@]}"; do
  cluster_alive
  ns=vs-$s vf=$CHART/ci/$s-values.yaml
  "${KC[@]}" create namespace "$ns" >/dev/null
  # No controller-manager: its "default" ServiceAccount, which Pods (the test hook's) need to be admitted.
  "${KC[@]}" create serviceaccount default -n "$ns" >/dev/null
  log=$(newlog secrets)
  secrets=$(k8s-existing-secrets "$CHART/values.yaml" "$vf" 2>"$log") || { fail "$s: read existingSecret names from $vf" "$log"; secrets=''; }
  while IFS=$'\t' read -r name keys; do
    [[ -n $name ]] || continue
    args=()
    IFS=, read -ra ks <<<"${keys:-}"
    for k in "${ks[@]}"; do args+=("--from-literal=$k=validate-placeholder-$k"); done
    ((${#args[@]})) || args=(--from-literal=placeholder=validate)
    check "$s: pre-create Secret $ns/$name (keys: ${keys:-none named in values})" \
      "${KC[@]}" create secret generic "$name" -n "$ns" "${args[@]}" || true
  done <<<"$secrets"
  log=$(newlog install)
  if helm install plantstore "$CHART" -n "$ns" -f "$vf" --no-hooks --timeout 120s >"$log" 2>&1; then
    unwarned "$log" "helm install -f ci/$s-values.yaml into $ns: installed, but the API server warned" \
      "helm install -f ci/$s-values.yaml into $ns ($(helm get manifest plantstore -n "$ns" | grep -c '^kind:') objects)"
    hooks_check "$s" "$ns" install
    # A generated Secret (tokens, Redis password) must survive an upgrade.
    snap() { "${KC[@]}" get secrets -n "$ns" --field-selector type!=helm.sh/release.v1 -o go-template='{{range .items}}{{.metadata.name}} {{range $k, $v := .data}}{{$k}}={{$v}} {{end}}{{"\n"}}{{end}}'; }
    before=$(snap)
    log=$(newlog upgrade)
    if helm upgrade plantstore "$CHART" -n "$ns" -f "$vf" --no-hooks --timeout 120s >"$log" 2>&1; then
      after=$(snap)
      if api_warnings "$log"; then
        fail "helm upgrade -f ci/$s-values.yaml: the API server warned" "$log.warnings"
      elif [[ $before == "$after" ]]; then
        pass "helm upgrade -f ci/$s-values.yaml keeps every Secret's data ($(grep -c . <<<"$before") Secrets)"
      else
        diff <(echo "$before") <(echo "$after") >"$log" || true
        fail "helm upgrade -f ci/$s-values.yaml changed Secret data (generated values not kept)" "$log"
      fi
      hooks_check "$s" "$ns" upgrade
    else
      fail "helm upgrade -f ci/$s-values.yaml" "$log"
    fi
  else
    fail "helm install -f ci/$s-values.yaml into $ns" "$log"
  fi
  [[ -s $RENDERED/helm-$s.yaml ]] && collect_pods "$RENDERED/helm-$s.yaml" "helm-$s"
done

apply_check() {
  local name=$1 dir=$2 log; shift 2
  log=$(newlog apply)
  if "${KC[@]}" apply -k "$dir" "$@" >"$log" 2>&1; then
    unwarned "$log" "$name: applied, but the API server warned" "$name ($(grep -c . "$log") objects)"
  else
    fail "$name" "$log"
  fi
}

# kubectl apply -k of every overlay, each into its own namespace unless the
# overlay sets one itself.
for o in "${OVLS[@]}"; do
  cluster_alive
  d=$OVERLAYS/$o
  [[ -s $RENDERED/kustomize-$o.yaml ]] || continue
  # The namespaces the overlay sets: kustomize prints block YAML, so
  # metadata.namespace is an indented "namespace:" in a top-level "metadata:".
  mapfile -t nss < <(awk '/^[^ ]/ {meta = $0 == "metadata:"} meta && /^  namespace: / && !seen[$2]++ {print $2}' \
    "$RENDERED/kustomize-$o.yaml")
  if ((${#nss[@]})); then
    for n in "${nss[@]}"; do
      "${KC[@]}" get namespace "$n" >/dev/null 2>&1 || "${KC[@]}" create namespace "$n" >/dev/null
    done
    apply_check "kubectl apply -k $d (namespace ${nss[*]} from the overlay)" "$d"
  else
    "${KC[@]}" create namespace "ovl-$o" >/dev/null
    apply_check "kubectl apply -k $d -n ovl-$o" "$d" -n "ovl-$o"
  fi
  collect_pods "$RENDERED/kustomize-$o.yaml" "kustomize-$o"
done

# Every pod template, as a Pod, in a namespace enforcing restricted:latest.
cluster_alive
PSA=psa-restricted
"${KC[@]}" create namespace "$PSA" >/dev/null
"${KC[@]}" label namespace "$PSA" \
  pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest \
  pod-security.kubernetes.io/warn=restricted pod-security.kubernetes.io/warn-version=latest >/dev/null
# No controller-manager: create the ServiceAccounts the pods name (and "default").
declare -A SAS=([default]=1)
for p in "${POD_LIST[@]}"; do SAS[${p##*$'\t'}]=1; done
for sa in "${!SAS[@]}"; do "${KC[@]}" create serviceaccount "$sa" -n "$PSA" >/dev/null; done
((${#POD_LIST[@]})) || fail "no pod templates found to check against Pod Security"
for p in "${POD_LIST[@]}"; do
  cluster_alive
  IFS=$'\t' read -r src file what _ <<<"$p"
  log=$(newlog psa)
  if "${KC[@]}" create --dry-run=server -n "$PSA" -f "$file" >"$log" 2>&1; then
    if grep -qi 'PodSecurity' "$log"; then
      fail "$src $what: Pod admitted but with a PodSecurity warning" "$log"
    else
      pass "$src $what: Pod admitted under restricted:latest"
      grep -i '^warning' "$log" | sed 's/^/      /' || true
    fi
  else
    fail "$src $what: Pod not admitted in the namespace enforcing restricted:latest" "$log"
  fi
done

summary
