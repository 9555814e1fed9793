#!/usr/bin/env bash
# The chart and the kustomize overlays on a real cluster of three nodes in
# three zones (tools/k8s/cluster.sh; CLUSTER_NODES sets how many): `make
# test-cluster`. This file brings the cluster up, imports plantstore's image
# and holds the helpers; the scenarios are the files of cluster-test.d/,
# sourced in order, each using these helpers (and those of the
# cluster-test.d/lib/ files it sources). Each check prints PASS or FAIL,
# each scenario one line of figures starting with "CLUSTER <scenario>"; the
# run ends with the time of each stage and "cluster: N passed, N failed".
# After teardown it checks that nothing of the cluster is left on the
# machine. docs/validation.md says what each scenario proves.
#
# Environment:
#   CLUSTER_SCENARIOS    extended regular expression on the file names of
#                        cluster-test.d/ to run (default: all)
#   CLUSTER_KEEP=1       leave the cluster up at the end (tear down with
#                        tools/k8s/cluster.sh down)
#   CLUSTER_REUSE=1      use a cluster that is already up instead of starting
#                        a new one (for working on a scenario; implies KEEP)
#   CLUSTER_LOAD_RATE    creates per second of the scenarios' load (default 250)
#   CLUSTER_FULL=1       every variant of the long scenarios (`make
#                        chaos-cluster`); without it, the bounded set CI runs
#   CLUSTER_WAIT_FOR     a file: the run starts the cluster and makes the
#                        releases, then waits for the file to exist before
#                        the first scenario puts load on the cluster (.ci/run:
#                        make test's end)
#   CLUSTER_TIMEOUT      bound of the run in seconds once the cluster's own
#                        tools are built (default 3600; the builds before it
#                        are not bounded, those of the later scenarios' tools
#                        are: on a cold machine they take part of it)
#   and those of cluster.sh (CLUSTER_DIR, CLUSTER_NETNS, CLUSTER_API_PORT, ...).
# shellcheck disable=SC2034 # variables it sets for the scenario files it sources
set -euo pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
TOOLS_MOD=$(dirname "$SELF")
REPO=$(cd "$TOOLS_MOD/../.." && pwd)
CLUSTER=$TOOLS_MOD/cluster.sh
export CLUSTER_DIR=${CLUSTER_DIR:-/tmp/plantstore-cluster}
NETNS=${CLUSTER_NETNS:-plantstore-k8s}
RATE=${CLUSTER_LOAD_RATE:-250}
FULL=${CLUSTER_FULL:-0}
REUSE=${CLUSTER_REUSE:-0}
KEEP=${CLUSTER_KEEP:-$REUSE}

# Build first, unbounded: on a cold machine the Go builds of Kubernetes,
# CoreDNS, Helm 3 and 4, policy-controller and the release tools take a
# quarter of an hour or more of this machine's two cores, and a bound meant
# for the scenarios must not stop a build. Then bound the run itself; timeout(1) signals this
# script, whose trap tears down.
if [[ -z ${_CLUSTER_TEST_BOUNDED:-} ]]; then
  build_t0=$SECONDS
  echo "== building what the cluster and the release need (unbounded; nothing when built already)"
  "$CLUSTER" build >/dev/null
  # The tools of the later scenarios' images (and Flux's and skaffold's) build
  # in the background, in a session of their own, while the cluster starts
  # and the first scenarios run: a scenario that needs one waits only for
  # what is left of its build (cluster.sh images, build.sh's locks). Under
  # .ci/run, its own prebuild of every tool does this.
  # shellcheck disable=SC2046 # one tool a word
  setsid "$TOOLS_MOD/build.sh" --prebuild $("$CLUSTER" late-tools) >"${TMPDIR:-/tmp}/plantstore-late-tools.log" 2>&1 &
  export _CLUSTER_PREBUILD_PID=$!
  "$REPO/tools/release/build.sh"
  echo "== built in $((SECONDS - build_t0))s"
  export _CLUSTER_TEST_BOUNDED=1
  exec timeout -k 60 "${CLUSTER_TIMEOUT:-3600}" "$SELF" "$@"
fi

t0=$SECONDS
declare -a STAGES=()
stage_start=$SECONDS stage_name=''
stage() {
  [[ -z $stage_name ]] || STAGES+=("$stage_name $((SECONDS - stage_start))s")
  stage_name=$1 stage_start=$SECONDS
  printf '\n== [%4ss] %s\n' "$((SECONDS - t0))" "$1"
}

PASSED=0 FAILED=0 FAILURES=()
pass() { PASSED=$((PASSED + 1)); printf 'PASS  %s\n' "$*"; }
fail() { FAILED=$((FAILED + 1)) FAILURES+=("$*"); printf 'FAIL  %s\n' "$*"; }
figures() { printf 'CLUSTER %s\n' "$*"; }

finish() {
  local rc=$? last=$stage_name
  trap - EXIT INT TERM
  stage 'done'
  # A background wait of a scenario (see later) stopped early by a failure.
  # shellcheck disable=SC2046 # one pid a word
  kill $(jobs -p) 2>/dev/null || true
  # The prebuild of tools no scenario asked for (CLUSTER_SCENARIOS).
  [[ -z ${_CLUSTER_PREBUILD_PID:-} ]] || kill -- -"$_CLUSTER_PREBUILD_PID" 2>/dev/null || true
  ((rc == 0)) || fail "the run stopped early (exit $rc) in stage: $last"
  if ((FAILED)) && [[ -d $CLUSTER_DIR/logs ]]; then
    # What a person needs to see why: the state of every namespace and the
    # components' last words, kept outside the directory teardown removes.
    local keep=${TMPDIR:-/tmp}/plantstore-cluster-failure
    rm -rf "$keep" && mkdir -p "$keep"
    kubectl get all,events -A -o wide >"$keep/state.txt" 2>&1 || true
    cp -r "$CLUSTER_DIR/logs" "$keep/" 2>/dev/null || true
    echo "state and logs of the failed run: $keep"
  fi
  if [[ $KEEP == 1 ]]; then
    echo "cluster kept: export KUBECONFIG=$CLUSTER_DIR/kubeconfig; tear down with $CLUSTER down"
  else
    stage teardown
    "$CLUSTER" down || true
    check_clean
    stage end
  fi
  echo
  echo "stages: $(IFS=,; echo "${STAGES[*]}" | sed 's/,/, /g')"
  # Said again last, where a reader of a long log (or of its tail) looks.
  ((FAILED == 0)) || printf 'failed: %s\n' "${FAILURES[@]}"
  echo "cluster: $PASSED passed, $FAILED failed"
  ((FAILED == 0 && rc == 0)) || exit 1
  exit 0
}
# The global sysctls, less the counters that move by themselves.
sysctls() { sysctl -a 2>/dev/null | grep -vE '^(fs\.(dentry-state|inode-nr|inode-state|file-nr|quota)|kernel\.(random|ns_last_pid|pty\.nr|sched_domain)|net\.netfilter\.nf_conntrack_count|vm\.stat)' | sort; }
# A cluster left up by an earlier run (CLUSTER_KEEP) has changed sysctls:
# take it down before recording what the machine is like without one.
if [[ $REUSE != 1 ]] && [[ -e $CLUSTER_DIR || -e /run/netns/$NETNS ]]; then
  echo "tearing down the cluster an earlier run left in $CLUSTER_DIR"
  "$CLUSTER" down >/dev/null
fi
SYSCTLS_BEFORE=$(sysctls)
# The pods' network namespaces of any containerd on the machine.
cni_netns() { compgen -G '/run/netns/cni-*' | sed 's|.*/||' | sort || true; }
NETNS_BEFORE=$(cni_netns)

# check_clean: after teardown nothing of the cluster is left: no namespace
# (its own or a pod's), mount, cgroup, process or state directory, and every
# sysctl as before.
check_clean() {
  local left=()
  [[ ! -e /run/netns/$NETNS ]] || left+=("network namespace $NETNS")
  compgen -G "/run/netns/$NETNS-*" >/dev/null && left+=("network namespaces $(cd /run/netns && echo "$NETNS"-*)")
  [[ ! -e $CLUSTER_DIR ]] || left+=("directory $CLUSTER_DIR")
  findmnt -rn -o TARGET | grep -q "^$CLUSTER_DIR/" && left+=("mounts under $CLUSTER_DIR")
  compgen -G "/sys/fs/cgroup/*/$NETNS" >/dev/null && left+=("cgroups /sys/fs/cgroup/*/$NETNS")
  local netns_now
  netns_now=$(cni_netns)
  [[ $(comm -13 <(echo "$NETNS_BEFORE") <(echo "$netns_now")) == "" ]] ||
    left+=("network namespaces in /run/netns: $(comm -13 <(echo "$NETNS_BEFORE") <(echo "$netns_now") | tr '\n' ' ')")
  pgrep -f "$CLUSTER_DIR/" >/dev/null && left+=("processes: $(pgrep -af "$CLUSTER_DIR/" | cut -c1-80 | tr '\n' ';')")
  local diff
  diff=$(diff <(echo "$SYSCTLS_BEFORE") <(sysctls) | grep '^[<>]' | head -n 5 || true)
  [[ -z $diff ]] || left+=("sysctls changed: $(echo "$diff" | tr '\n' ';')")
  if ((${#left[@]})); then fail "teardown left: ${left[*]}"; else pass "teardown left nothing (namespace, mounts, cgroups, processes, directory; sysctls as before)"; fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'echo "terminated (CLUSTER_TIMEOUT reached?)" >&2; exit 143' TERM

# ---------------------------------------------------------------------------
stage "cluster up (builds what is missing)"
if [[ $REUSE == 1 ]] && "$CLUSTER" status >/dev/null 2>&1; then
  echo "reusing the cluster in $CLUSTER_DIR"
else
  "$CLUSTER" up
fi
BIN=$(cat "$CLUSTER_DIR/bin")
export PATH=$BIN:$PATH KUBECONFIG=$CLUSTER_DIR/kubeconfig
export HELM_CACHE_HOME=$CLUSTER_DIR/helm/cache HELM_CONFIG_HOME=$CLUSTER_DIR/helm/config HELM_DATA_HOME=$CLUSTER_DIR/helm/data
pass "nodes Ready: $(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} (zone {.metadata.labels.topology\.kubernetes\.io/zone}, {.status.nodeInfo.kubeletVersion}) {end}')"
# node_netns NODE: the network namespace of a node (its kube-proxy's and
# kube-router's rules).
node_netns() { "$CLUSTER" nodes | awk -v n="$1" '$1 == n {print $3}'; }
# pod_node NS POD: the node a pod runs on.
pod_node() { kubectl get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}'; }
# live_api_pod NS: an API pod not on its way out (helm --wait returns while
# the old ReplicaSet's pods still terminate; one of those is no victim).
live_api_pod() {
  kubectl get pods -n "$1" -l app.kubernetes.io/component=api -o json |
    jq -r '[.items[] | select(.metadata.deletionTimestamp == null)][0].metadata.name // empty'
}
# pod_logs_start NS SELECTOR CONTAINER FILE: follow the logs of the pods
# SELECTOR picks (their CONTAINER) into FILE, each line with its pod, so a
# pod stopped meanwhile keeps its lines; pod_logs_stop FILE ends that.
# api_logs_start NS FILE: the API pods'. api_logs_warnings FILE: stop
# following and print their warnings and errors (the first 20).
pod_logs_start() {
  kubectl logs -f -n "$1" -l "$2" -c "$3" --prefix --max-log-requests=10 --since=1s >"$4" 2>/dev/null &
  echo $! >"$4.pid"
}
pod_logs_stop() { kill "$(cat "$1.pid")" 2>/dev/null || true; }
api_logs_start() { pod_logs_start "$1" app.kubernetes.io/component=api plantstore "$2"; }
api_logs_warnings() {
  pod_logs_stop "$1"
  grep -E '"level":"(warn|error)"' "$1" | head -n 20 || true
}

stage "plantstore image (make image) into the nodes"
TAG=$(git -C "$REPO" describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_REPO=plantstore.test/plantstore
IMAGE="$IMAGE_REPO:$TAG" OUT=$CLUSTER_DIR/plantstore-image.tar make -C "$REPO" --no-print-directory image >"$CLUSTER_DIR/logs/image.log" 2>&1 ||
  { tail -n 30 "$CLUSTER_DIR/logs/image.log"; fail "make image"; exit 1; }
"$CLUSTER" import "$CLUSTER_DIR/plantstore-image.tar" >/dev/null
pass "image $IMAGE_REPO:$TAG imported"

# node_image_tag SRC DST: every node's containerd knows image SRC as DST too
# (a "new" tag of an image the nodes have, for a rolling update to roll to).
node_image_tag() {
  local sock
  for sock in $("$CLUSTER" nodes | awk '{print $4}'); do
    ctr --address "$sock" -n k8s.io images tag --force "$1" "$2" >/dev/null
  done
}

# The images the chart names by default cannot be pulled here: the ones the
# node has stand in for them.
LOCAL_IMAGES=(--set "redis.image.repository=plantstore.test/redis" --set-string "redis.image.tag=7.0"
  --set "tests.image.repository=plantstore.test/client" --set-string "tests.image.tag=1")
# The chart's NetworkPolicy admits the admin port from the monitoring
# namespace alone: a scenario that reads /metrics through the API server's
# pod proxy adds the API server's address, as the chart README says.
APISERVER_METRICS=(--set-json "networkPolicy.metrics.cidrs=[\"$(kubectl get endpoints kubernetes -n default -o jsonpath='{.subsets[0].addresses[0].ip}')/32\"]")
# APP_IMAGE: the helm flags of this run's plantstore image and the nodes' others.
APP_IMAGE=(--set image.repository="$IMAGE_REPO" --set-string image.tag="$TAG" "${LOCAL_IMAGES[@]}")
CHART=$REPO/charts/plantstore
NS=plantstore
REL=plantstore

# restricted_ns NAME: a namespace that enforces Pod Security restricted.
restricted_ns() {
  kubectl create namespace "$1" >/dev/null
  kubectl label namespace "$1" pod-security.kubernetes.io/enforce=restricted \
    pod-security.kubernetes.io/enforce-version=v1.31 pod-security.kubernetes.io/warn=restricted >/dev/null
}

# pod_spec_security: the restricted securityContext of the scenarios' pods.
SECURE='securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}'

# client NS NAME SCRIPT [SECRET]: run SCRIPT in a pod of the client image
# (with SECRET's tokens at /etc/tokens/tokens) and print its log.
# client_start NS NAME SCRIPT [SECRET] [LABELS]: only start it (LABELS, a
# YAML map, in place of its label); client_log NS NAME: wait for it to end,
# print its log and delete it.
client() { client_start "$@"; client_log "$1" "$2"; }
client_start() {
  local ns=$1 name=$2 script=$3 secret=${4:-} labels=${5:-'{app.kubernetes.io/name: scenario-client}'}
  local vol="volumes: [{name: tmp, emptyDir: {sizeLimit: 1Mi}}" mount="volumeMounts: [{name: tmp, mountPath: /tmp}"
  if [[ -n $secret ]]; then
    vol+=", {name: tokens, secret: {secretName: $secret, items: [{key: tokens, path: tokens}]}}"
    mount+=", {name: tokens, mountPath: /etc/tokens, readOnly: true}"
  fi
  vol+="]" mount+="]"
  kubectl apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $name, labels: $labels}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
    - name: client
      image: plantstore.test/client:1
      imagePullPolicy: Never
      command: [sh, -c, $(jq -Rs . <<<"$script")]
      $SECURE
      $mount
  $vol
EOF
}
client_log() {
  kubectl wait -n "$1" --for=jsonpath='{.status.phase}'=Succeeded "pod/$2" --timeout=120s >/dev/null 2>&1 || true
  kubectl logs -n "$1" "$2"
  kubectl delete -n "$1" pod "$2" --wait=false >/dev/null
}

# load_start NS NAME SECONDS [SERVICE_URL] [SECRET]: the open-loop create load
# (tools/k8s/load) in a pod of NS, RATE creates a second for SECONDS. For one
# call, LOAD_ARGS adds k8s-load flags (words), LOAD_NODE pins the pod to a
# node (one a scenario will not disrupt), and LOAD_GATEWAY="IP HOST CA_SECRET"
# sends it to https://HOST, HOST resolving to IP and trusted by the CA in the
# Secret CA_SECRET (key ca.crt) of NS.
load_start() {
  local ns=$1 name=$2 secs=$3 url=${4:-http://$REL:8080} secret=${5:-$REL-tokens} extra='' a node='' gw_ip gw_host gw_ca
  for a in ${LOAD_ARGS:-}; do extra+=", \"$a\""; done
  [[ -z ${LOAD_NODE:-} ]] || node="nodeSelector: {kubernetes.io/hostname: $LOAD_NODE}"
  local aliases='' ca_mount='' ca_vol=''
  if [[ -n ${LOAD_GATEWAY:-} ]]; then
    read -r gw_ip gw_host gw_ca <<<"$LOAD_GATEWAY"
    url=https://$gw_host extra+=", \"-ca-file\", \"/etc/gateway/ca.crt\""
    aliases="hostAliases: [{ip: \"$gw_ip\", hostnames: [\"$gw_host\"]}]"
    ca_mount=", {name: gateway-ca, mountPath: /etc/gateway, readOnly: true}"
    ca_vol=", {name: gateway-ca, secret: {secretName: $gw_ca, items: [{key: ca.crt, path: ca.crt}]}}"
  fi
  kubectl apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $name, labels: {app.kubernetes.io/name: scenario-load}}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  $node
  $aliases
  containers:
    - name: load
      image: plantstore.test/load:1
      imagePullPolicy: Never
      args: [-url, "$url", -token-file, /etc/tokens/tokens, -rate, "$RATE", -duration, "${secs}s", -stop-addr, ":8090"$extra]
      # Not BestEffort: when a disruption saturates the CPU (a node's loss),
      # a pod without requests gets a sliver of it, and a caller starved for
      # seconds misses its own HTTP/2 health check's answer and fails every
      # request in flight on the connection.
      resources: {requests: {cpu: 100m}}
      $SECURE
      volumeMounts: [{name: tokens, mountPath: /etc/tokens, readOnly: true}$ca_mount]
  volumes: [{name: tokens, secret: {secretName: $secret, items: [{key: tokens, path: tokens}]}}$ca_vol]
EOF
  kubectl wait -n "$ns" --for=jsonpath='{.status.phase}'=Running "pod/$name" --timeout=60s >/dev/null
}

# app_manifest NAME CONTAINER IMAGE PORTS [POD_FIELD...]: Deployment NAME,
# one replica of one container CONTAINER running plantstore.test/IMAGE
# (restricted), and Service NAME; PORTS, "name=port ...", the container's
# and the Service's; each POD_FIELD a line of the pod's spec; the
# container's own further fields (YAML lines, unindented) on stdin.
app_manifest() {
  local name=$1 container=$2 image=$3 p cports='' sports='' pod=''
  for p in $4; do
    cports+="{name: ${p%=*}, containerPort: ${p#*=}}, " sports+="{name: ${p%=*}, port: ${p#*=}, targetPort: ${p#*=}}, "
  done
  shift 4
  for p in "$@"; do pod+="      $p"$'\n'; done
  cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $name}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: $name}}
  template:
    metadata: {labels: {app.kubernetes.io/name: $name}}
    spec:
${pod}      containers:
        - name: $container
          image: plantstore.test/$image
          imagePullPolicy: Never
          ports: [${cports%, }]
$(sed 's/^/          /')
          $SECURE
---
apiVersion: v1
kind: Service
metadata: {name: $name}
spec:
  selector: {app.kubernetes.io/name: $name}
  ports: [${sports%, }]
---
EOF
}

# receiver_manifest [NODE]: the Deployment and Service webhook-receiver
# (tools/k8s/cmd/k8s-webhook-receiver), on NODE when given: the scenarios'
# webhook subscriber.
receiver_manifest() {
  local node=()
  [[ -z ${1:-} ]] || node=("nodeSelector: {kubernetes.io/hostname: $1}")
  app_manifest webhook-receiver receiver webhook-receiver:1 http=8080 "automountServiceAccountToken: false" "${node[@]}" <<'EOF'
args: [-addr, ":8080"]
readinessProbe: {httpGet: {path: /stats, port: 8080}, periodSeconds: 2}
EOF
}

# load_stop NS NAME: the load ends its sending now, its check following as
# after its duration: for a stage whose fault is over before the bound it
# gave the load.
load_stop() {
  local ip
  ip=$(kubectl get pod -n "$1" "$2" -o jsonpath='{.status.podIP}')
  [[ $(node_curl -X POST -o /dev/null -w '%{http_code}' "http://$ip:8090/stop") == 204 ]] || echo "load_stop: $2 was not stopped early" >&2
}

# load_result NS NAME: wait for the load pod and print its JSON summary.
load_result() {
  local ns=$1 name=$2
  kubectl wait -n "$ns" --for=jsonpath='{.status.phase}'=Succeeded "pod/$name" --timeout=300s >/dev/null ||
    { kubectl logs -n "$ns" "$name" | tail -n 5 >&2; return 1; }
  kubectl logs -n "$ns" "$name" | tail -n 1
  kubectl delete -n "$ns" pod "$name" --wait=false >/dev/null
}

# window_503_ms JSON: from the load's first 503 to its first 200 after the
# last one (0 without a 503; 999999999 when no 200 came after the last 503,
# so that no bound passes a load that ended inside its window). covered JSON
# FROM TO: the load ran from before FROM (ms) to after TO.
window_503_ms() { jq 'if .First503 > 0 then (if .FirstOKAfter503 > 0 then .FirstOKAfter503 - .First503 else 999999999 end) else 0 end' <<<"$1" 2>/dev/null || echo -1; }
covered() { jq -e --argjson a "$2" --argjson b "$3" '.Start < $a and .End > $b' <<<"$1" >/dev/null 2>&1; }
# The bound of the 503s while the chart's standalone Redis restarts (an
# upgrade that changes its spec, a new image): its stop, its new pod's start
# and AOF load, the API pods' reconnect (docs/reliability.md).
REDIS_RESTART_503_MS=15000

# load_verdict NAME JSON [ALLOW_503]: PASS when every answer was 200 (or, with
# ALLOW_503, a 503 with Retry-After), no transport error, no generator stall
# and every acknowledged plant stored; prints the figures either way.
load_verdict() {
  local name=$1 s=$2 allow=${3:-0} bad
  figures "$name sent=$(jq .Sent <<<"$s") codes=$(jq -c .Codes <<<"$s") transport_errors=$(jq .TransportErrors <<<"$s") acknowledged=$(jq .Acknowledged <<<"$s") verified=$(jq .Verified <<<"$s") lost=$(jq '.Lost | length' <<<"$s") p99_ms=$(jq .LatencyP99Ms <<<"$s") max_ms=$(jq .LatencyMaxMs <<<"$s") stalls=$(jq .Stalls <<<"$s")"
  if ((allow)); then
    bad=$(jq '[.Codes | to_entries[] | select(.key != "200" and .key != "503") | .value] | add // 0' <<<"$s")
    bad=$((bad + $(jq .NoRetryAfter <<<"$s")))
  else
    bad=$(jq '[.Codes | to_entries[] | select(.key != "200") | .value] | add // 0' <<<"$s")
  fi
  if ((bad == 0)) && jq -e '.TransportErrors == 0 and .Stalls == 0 and (.Lost | length) == 0 and .Unverifiable == 0 and .Acknowledged > 0 and .Verified == .Acknowledged' <<<"$s" >/dev/null; then
    return 0
  fi
  jq -c '{ErrorSamples, AnswerSamples, Slowest, Lost: (.Lost[:5]), Unverifiable, NoRetryAfter}' <<<"$s"
  return 1
}

# logged NAME WHAT CMD...: run CMD, its output into logs/NAME.log; when it
# fails, FAIL WHAT and the log's last 20 lines. Returns CMD's status (a
# caller that goes on either way adds `|| true`).
logged() {
  local log=$CLUSTER_DIR/logs/$1.log what=$2 rc=0
  shift 2
  "$@" >"$log" 2>&1 || rc=$?
  ((rc == 0)) || { fail "$what"; tail -n 20 "$log"; }
  return "$rc"
}

# port_forward NS TARGET PORT NAME: kubectl port-forward from a free port of
# the host to TARGET's PORT, its log logs/NAME-port-forward.log; sets PF_PID
# and, once it forwards (10 s at most), PF_URL (http://127.0.0.1:PORT).
port_forward() {
  local log=$CLUSTER_DIR/logs/$4-port-forward.log
  kubectl port-forward -n "$1" "$2" ":$3" >"$log" 2>&1 &
  PF_PID=$!
  for _ in $(seq 50); do grep -q 'Forwarding from 127.0.0.1:' "$log" && break; sleep 0.2; done
  PF_URL=http://127.0.0.1:$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -n 1)
}

# secret_digest NS NAME KEY: a digest of a Secret's value (empty when missing).
secret_digest() {
  local v
  v=$(kubectl get secret -n "$1" "$2" -o jsonpath="{.data.${3//./\\.}}" 2>/dev/null)
  [[ -z $v ]] || sha256sum <<<"$v" | cut -c1-12
}

# The processes some scenarios run on the node, in the cluster's network
# namespace (pods could neither pull their images nor reach the node's
# registry on its loopback address): 07-admission.sh's policy-controller,
# 15-flux.sh's controllers.
# K8S_CACHE: the cluster's tools cache (tools/k8s/build.sh's K8S_TOOLS_CACHE).
K8S_CACHE=${CLUSTER_CACHE:-${XDG_CACHE_HOME:-/tmp}/plantstore-k8s}
# NODE_API: the API server as the node's own components reach it.
NODE_API=$(kubectl config view --kubeconfig "$CLUSTER_DIR/pki/kubeconfig" -o jsonpath='{.clusters[0].cluster.server}')
# mod_version DIR MODULE: the version of MODULE the Go module in DIR
# requires. mod_dir DIR MODULE[@VERSION]: its source in the module cache,
# fetched through the module proxy when missing (go mod download, not go
# list -m -f {{.Dir}}: the tools may come from the tools cache while this
# module cache never held their sources).
mod_version() { (cd "$1" && GOWORK=off go list -m -f '{{.Version}}' "$2"); }
mod_dir() { (cd "$1" && GOWORK=off go mod download -json "$2" | jq -r .Dir); }
# node_tools LOG TOOL...: build the tools (or find them in the tools cache)
# with tools/k8s/build.sh, its output into LOG; prints their directory.
node_tools() { K8S_TOOLS_CACHE=$K8S_CACHE "$TOOLS_MOD/build.sh" "${@:2}" 2>"$1" | tail -n 1; }
# node_kubeconfig FILE USER NS ACCOUNT: a kubeconfig for a node process, as
# USER with a token of ServiceAccount NS/ACCOUNT (TokenRequest API, 24 h).
node_kubeconfig() {
  local token
  token=$(kubectl create token "$4" -n "$3" --duration=24h)
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: node, cluster: {server: "$NODE_API", certificate-authority: "$CLUSTER_DIR/pki/ca.crt"}}]
users: [{name: $2, user: {token: "$token"}}]
contexts: [{name: $2, context: {cluster: node, user: $2}}]
current-context: $2
EOF
  chmod 600 "$1"
}
# node_start NAME LOG [VAR=VALUE...] CMD...: CMD in the background in the
# cluster's network namespace, without the proxy variables, its output into
# LOG; recorded in the cluster's pids file under NAME, for teardown to stop
# it ($! is CMD's own process: nsenter and env exec it). NODE_PID: its pid.
node_start() {
  nsenter --net="/run/netns/$NETNS" env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy "${@:3}" >"$2" 2>&1 &
  NODE_PID=$!
  echo "$NODE_PID $1" >>"$CLUSTER_DIR/pids"
}
# node_stop NAME...: the node processes recorded under those names (this
# run's, or an earlier run's on a reused cluster) stopped and unrecorded. On
# a stop signal one drains for a while, keeping its port meanwhile: killed
# after 10 s.
node_stop() {
  local pid i n names
  names="$(printf ' %s' "$@") "
  for pid in $(awk -v names="$names" 'index(names, " " $2 " ") {print $1}' "$CLUSTER_DIR/pids"); do
    kill "$pid" 2>/dev/null || continue
    for ((i = 0; i < 20; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  done
  for n in "$@"; do sed -i "/ $n\$/d" "$CLUSTER_DIR/pids"; done
}

ms() { date +%s%3N; }
# hex N: N random bytes in hex (tokens, trace ids).
hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# node_curl ARGS...: curl from the control plane's namespace (its
# kube-proxy routes a Service's ClusterIP there, as a node's does).
node_curl() { nsenter --net="/run/netns/$NETNS" curl -s --max-time 10 "$@"; }
# api_token NS: the first raw token of the release's tokens Secret.
api_token() { kubectl get secret -n "$1" "$REL-tokens" -o jsonpath='{.data.tokens}' | base64 -d | grep -v -e '^#' -e '^sha256:' -e '^$' | head -n 1 | awk '{print $1}'; }
# node_plant NS METHOD ID [TOKEN]: POST (a plant named plant-ID) or GET
# /plants/ID through the release's Service, from the node, with TOKEN (by
# default api_token); prints the HTTP code (000 when nothing answers).
node_plant() {
  local ip token=${4:-} args=()
  ip=$(kubectl get svc -n "$1" "$REL" -o jsonpath='{.spec.clusterIP}' 2>/dev/null) || true
  [[ -n $token ]] || token=$(api_token "$1") || true
  if [[ $2 == POST ]]; then
    args=(-X POST "http://$ip:8080/plants" -H 'Content-Type: application/json' -d "{\"id\": $3, \"name\": \"plant-$3\"}")
  else
    args=("http://$ip:8080/plants/$3")
  fi
  node_curl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "${args[@]}" || true
}


# later FN: call FN after the last scenario file, before teardown. A scenario
# whose last check is a long wait (the Prometheus alert resolving) starts
# that wait in the background and checks it here, so the scenarios after it
# run meanwhile.
LATER=()
later() { LATER+=("$1"); }

# beside NAME CMD...: run CMD in a subshell in the background, its output
# kept, while the run goes on; joined after the next scenario file (or by
# `joined NAME`): its output printed then, its PASS and FAIL lines counted.
# For proofs that mostly wait (Helm, controllers) in namespaces of their
# own, with no load generator and no timing bound of their own, so what
# runs beside them changes neither's verdict. A scenario file whose first
# lines say "runs beside the next scenario" runs whole this way.
declare -A BESIDE_PID=() BESIDE_T=()
beside() {
  local name=$1
  shift
  printf '\n== [%4ss] %s: started, beside what follows (its output when joined)\n' "$((SECONDS - t0))" "$name"
  ("$@") >"$CLUSTER_DIR/logs/beside-$name.log" 2>&1 &
  BESIDE_PID[$name]=$! BESIDE_T[$name]=$SECONDS
}
joined() {
  local name=$1 rc=0 log=$CLUSTER_DIR/logs/beside-$1.log
  [[ -n ${BESIDE_PID[$name]:-} ]] || return 0
  wait "${BESIDE_PID[$name]}" || rc=$?
  printf '\n== [%4ss] %s: joined, %ss after it started; what it printed:\n' "$((SECONDS - t0))" "$name" "$((SECONDS - BESIDE_T[$name]))"
  cat "$log"
  PASSED=$((PASSED + $(grep -c '^PASS  ' "$log" || true)))
  FAILED=$((FAILED + $(grep -c '^FAIL  ' "$log" || true)))
  mapfile -t -O "${#FAILURES[@]}" FAILURES < <(sed -n 's/^FAIL  //p' "$log")
  ((rc == 0)) || fail "$name stopped early (exit $rc)"
  unset "BESIDE_PID[$name]"
}

# joined_all: join whatever runs beside, before a stage whose verdict is
# timed (an open-loop load): their CPU would be its stalls and latency.
joined_all() {
  local name
  for name in "${!BESIDE_PID[@]}"; do joined "$name"; done
}

# wait_go: with CLUSTER_WAIT_FOR, wait for its file once (05-release.sh
# after making the releases, or before the first other scenario).
wait_go() {
  [[ -n ${CLUSTER_WAIT_FOR:-} ]] || return 0
  stage "waiting for $CLUSTER_WAIT_FOR (CLUSTER_WAIT_FOR)"
  until [[ -e $CLUSTER_WAIT_FOR ]]; do sleep 1; done
  CLUSTER_WAIT_FOR=''
}

# ---------------------------------------------------------------------------
for f in "$TOOLS_MOD"/cluster-test.d/*.sh; do
  [[ $(basename "$f") =~ ${CLUSTER_SCENARIOS:-.} ]] || continue
  [[ $(basename "$f") == 0[35]-* ]] || wait_go
  started_before=("${!BESIDE_PID[@]}")
  if head -n 5 "$f" | grep -q '^# runs beside the next scenario'; then
    # shellcheck source=/dev/null
    beside "$(basename "$f" .sh)" source "$f"
  else
    # shellcheck source=/dev/null
    source "$f"
  fi
  for name in "${started_before[@]}"; do joined "$name"; done
done
joined_all
for fn in "${LATER[@]}"; do "$fn"; done
