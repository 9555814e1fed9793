#!/usr/bin/env bash
# A real Kubernetes v1.31 cluster of one or more nodes, one a zone, on this
# machine, for the chart's tests and for a person who wants to try the chart
# on real kubelets with no Docker, no registry and no network: every
# component is built from the Go modules pinned in tools/k8s, containerd and
# runc come from Debian, and every image is built here and imported into
# each node's containerd. Certificates and kubeconfigs come from kubeadm's
# `init phase certs` and `init phase kubeconfig`, configuration files and
# bootstrap manifests from tools/k8s/node/. See docs/validation.md.
#
#   tools/k8s/cluster.sh up | down | status    start (building what is
#       missing, printing the KUBECONFIG), stop leaving no trace, is it up
#   tools/k8s/cluster.sh import ARCHIVE...     OCI image archives into every node
#   tools/k8s/cluster.sh images GROUP...       build and import a group's
#       images (images.sh) unless the nodes have them
#   tools/k8s/cluster.sh late-tools            the tools those groups and the
#       Flux and skaffold scenarios need, in the order they do
#   tools/k8s/cluster.sh nodes                 name, zone, network namespace
#       and containerd socket of each node
#   tools/k8s/cluster.sh node-kill | node-start NODE    a power cut (every
#       process and container stops, the link goes down); its boot
#   tools/k8s/cluster.sh partition [--one-way] ZONE... [-- ZONE...] | heal
#       the named zones' nodes cut off from the other zones' (after --: from
#       those only) and the control plane (--one-way: only what they send);
#       every partition gone
#
# The control plane (etcd, API server, controller manager, scheduler,
# metrics-server, registry) runs in a network namespace of its own
# ($CLUSTER_NETNS) holding the fabric, a bridge; each node in one of its own
# ($CLUSTER_NETNS-ZONE) with its own containerd, kubelet, kube-proxy,
# kube-router and node-local CoreDNS, one veth into the fabric and its pods
# on a bridge and subnet of its own, so pod traffic crosses nodes as on a
# routed cluster. No namespace has a default route: nothing the cluster runs
# reaches beyond this machine, and its iptables rules, routes and namespaced
# sysctls stay in there. The host reaches the API server and the registry
# through loopback forwards (socat). Teardown stops only the processes this
# script started (their PIDs are recorded) and its containerds' containers,
# unmounts what it and the kubelets mounted, removes the namespaces and
# cgroups, and restores the three global sysctls the kubelet changes.
#
# Environment:
#   CLUSTER_DIR     state, logs and data (default /tmp/plantstore-cluster)
#   CLUSTER_CACHE   built binaries (default ${XDG_CACHE_HOME:-/tmp}/plantstore-k8s)
#   CLUSTER_NODES   nodes, one a zone (default 3; 1 for a quick try)
#   CLUSTER_NETNS   network namespace name of the control plane, and the
#                   prefix of the nodes' (default plantstore-k8s)
#   CLUSTER_API_PORT  host loopback port of the API server (default 16443)
#   CLUSTER_REGISTRY_PORT  loopback port of the OCI registry (CNCF
#                   Distribution), the same in the namespace and on the host,
#                   so that `make release` pushes to the very name the nodes
#                   pull from (default 15000)
# Two clusters with different CLUSTER_DIR, CLUSTER_NETNS, CLUSTER_API_PORT
# and CLUSTER_REGISTRY_PORT can run side by side.
set -euo pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
TOOLS_MOD=$(dirname "$SELF")
REPO=$(cd "$TOOLS_MOD/../.." && pwd)
DIR=${CLUSTER_DIR:-/tmp/plantstore-cluster}
CACHE=${CLUSTER_CACHE:-${XDG_CACHE_HOME:-/tmp}/plantstore-k8s}
NS=${CLUSTER_NETNS:-plantstore-k8s}
API_PORT=${CLUSTER_API_PORT:-16443}
REGISTRY_PORT=${CLUSTER_REGISTRY_PORT:-15000}
REGISTRY=127.0.0.1:$REGISTRY_PORT
export GOWORK=off

NODES=${CLUSTER_NODES:-3}
ZONES=(a b c d e f g h i)
[[ $NODES =~ ^[1-9]$ ]] || { echo "cluster: CLUSTER_NODES must be 1 to ${#ZONES[@]}" >&2; exit 2; }

# The addresses, all inside the namespaces: the control plane is 10.87.0.1
# on the fabric, node N (zone a, b, c...) 10.87.0.1N with pods in 10.88.N.0/24.
CP_IP=10.87.0.1
CP_NAME=plantstore-control # kube-proxy's name in the control plane's namespace (no kubelet, no Node)
API_SECURE_PORT=6443   # the API server's, on CP_IP
API_ENDPOINT=$CP_IP:$API_SECURE_PORT
ETCD_URL=http://127.0.0.1:2379
# shellcheck disable=SC2034 # named by tools/k8s/node/ (NODE_VARS below)
CLUSTER_CIDR=10.88.0.0/16
# Routed to lo, so that a namespace's own ClusterIP connections work; its
# first address is the API server's Service (kubeadm puts it in the certificate).
SVC_CIDR=10.96.0.0/16
# The cluster DNS, on lo of every node (and of the control plane) as
# NodeLocal DNSCache runs it: a node lost takes only its own DNS.
DNS_IP=10.96.0.10
# The variables tools/k8s/node/'s files may name as ${VAR} (render).
NODE_VARS=(DIR NODE_DIR NODE_NAME NODE_IP API_SECURE_PORT API_ENDPOINT ETCD_URL POD_CIDR CLUSTER_CIDR SVC_CIDR DNS_IP
  CGROUP_ROOT CP_IP REGISTRY REGISTRY_PORT KUBE_VERSION PV)
GLOBAL_SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory)

# node_vars N: the NODE_*, POD_CIDR, CGROUP_ROOT and ZONE of node N (1-based).
node_vars() {
  ZONE=${ZONES[$(($1 - 1))]}
  NODE_NAME=plantstore-$ZONE
  NODE_IP=10.87.0.1$1
  NODE_DIR=$DIR/nodes/$ZONE
  NODE_NS=$NS-$ZONE
  POD_CIDR=10.88.$1.0/24
  CGROUP_ROOT=/$NS/$ZONE # the node's pods' cgroups, in every hierarchy
}
# node_index NAME|ZONE: N of the node.
node_index() {
  local i
  for ((i = 1; i <= NODES; i++)); do
    [[ $1 == "${ZONES[$((i - 1))]}" || $1 == "plantstore-${ZONES[$((i - 1))]}" ]] && { echo "$i"; return; }
  done
  die "no node $1 (nodes: $(for ((i = 1; i <= NODES; i++)); do printf 'plantstore-%s ' "${ZONES[$((i - 1))]}"; done))"
}

t0=$SECONDS
say() { printf '== [%4ss] %s\n' "$((SECONDS - t0))" "$*"; }
die() { echo "cluster: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root (network namespace, containerd, kubelet)"

# ---------------------------------------------------------------------------
install_packages() {
  local need=() p
  declare -A PKG=([containerd]=containerd [runc]=runc [etcd]=etcd-server [socat]=socat [conntrack]=conntrack
    [iptables]=iptables [ipset]=ipset [nsenter]=util-linux [buildah]=buildah [busybox]=busybox-static
    [redis-server]=redis-server [curl]=curl [jq]=jq [ip]=iproute2 [envsubst]=gettext-base)
  for p in "${!PKG[@]}"; do command -v "$p" >/dev/null 2>&1 || need+=("${PKG[$p]}"); done
  [[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
  if ((${#need[@]})); then
    say "installing Debian packages: ${need[*]}"
    "$REPO/tools/apt-get.sh" update -qq
    DEBIAN_FRONTEND=noninteractive "$REPO/tools/apt-get.sh" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

# The tools of the image groups (images.sh) only some scenarios run, built
# when a scenario first asks for its group rather than before the cluster
# starts: on a cold machine they are most of the build.
declare -A GROUP_TOOLS=(
  [exporter]="redis-exporter"
  [gateway]="traefik"
  [tracing]="jaeger otelcol"
  [prometheus]="prometheus prometheus-operator prometheus-config-reloader"
)
# late_tools: those and the host tools of the scenarios after the cluster's
# start (Helm 4 of the release scenario, policy-controller of the admission
# scenario, Flux, skaffold), in the order the scenarios need them:
# cluster-test.sh and .ci/run build them in the background while the cluster
# starts and the first scenarios run.
late_tools() {
  echo helm4 policy-controller source-controller helm-controller "${GROUP_TOOLS[exporter]}" "${GROUP_TOOLS[gateway]}" \
    "${GROUP_TOOLS[tracing]}" "${GROUP_TOOLS[prometheus]}" skaffold
}

# build sets BIN: build.sh's cache, with this module's own small commands.
build() {
  install_packages
  BIN=$(K8S_TOOLS_CACHE=$CACHE "$TOOLS_MOD/build.sh" kubeadm kube-apiserver kube-controller-manager kube-scheduler \
    kubelet kube-proxy kubectl helm coredns metrics-server kube-router | tail -n 1)
  # Seconds from Go's build cache, so always rebuilt.
  (cd "$TOOLS_MOD" && CGO_ENABLED=0 go build -trimpath -o "$BIN/" ./cmd/k8s-pause ./cmd/k8s-webhook-receiver ./cmd/k8s-gitops-phases)
  (cd "$TOOLS_MOD/load" && CGO_ENABLED=0 go build -trimpath -o "$BIN/k8s-load" .)
  # The node's registry, from the release tools' module.
  (cd "$REPO/tools/release" && go build -trimpath -o "$BIN/" github.com/distribution/distribution/v3/cmd/registry)
}

# ---------------------------------------------------------------------------
# start NAME CMD...: CMD in the background in the control plane's namespace,
# logging to $DIR/logs/NAME.log, its PID recorded; start_in NETNS NAME CMD...
# the same in another namespace (a node's).
start() { start_in "$NS" "$@"; }
start_in() {
  local netns=$1 name=$2; shift 2
  nsenter --net="/run/netns/$netns" "$@" >>"$DIR/logs/$name.log" 2>&1 &
  echo "$! $name" >>"$DIR/pids"
  local cg
  cg=$(system_cgroup)
  [[ -z $cg ]] || echo "$!" >"$cg/cgroup.procs"
}

# system_cgroup: the CPU cgroup of the cluster's own processes, beside the
# nodes' pod cgroups ($NS/ZONE) with one node's weight, as a node's system
# daemons sit beside kubepods: in the root cgroup each of their threads
# would weigh as much as every pod together, and a drain's control-plane
# work starve the pods. The cluster weighs eight of the machine's other
# processes, so that a build beside it slows it rather than stops it.
system_cgroup() {
  local c=/sys/fs/cgroup/cpu/$NS # cgroup v1, the hierarchy the kubelets use here
  [[ -d /sys/fs/cgroup/cpu ]] || return 0
  if [[ ! -d $c/system ]]; then
    mkdir -p "$c/system"
    echo 8192 >"$c/cpu.shares"
    echo 1024 >"$c/system/cpu.shares"
  fi
  echo "$c/system"
}

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 4; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    check_alive
    sleep 0.25
  done
  die "$what not ready after ${secs}s"
}

# check_alive: die, with its log, if a recorded process has exited.
check_alive() {
  local pid name
  while read -r pid name; do
    kill -0 "$pid" 2>/dev/null || { tail -n 30 "$DIR/logs/$name.log" >&2; die "$name (pid $pid) exited; log: $DIR/logs/$name.log"; }
  done <"$DIR/pids"
}

in_ns() { nsenter --net="/run/netns/$NS" "$@"; }
in_node() { local n=$1; shift; nsenter --net="/run/netns/$NS-$n" "$@"; }
# coredns_ready NETNS: CoreDNS in NETNS answers its readiness check.
coredns_ready() {
  nsenter --net="/run/netns/$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/8182 && printf "GET /ready HTTP/1.0\r\n\r\n" >&3 && grep -q "200 OK" <&3'
}
# forward NAME PORT HOST HOSTPORT: the host's 127.0.0.1:PORT to HOST:HOSTPORT
# in the control plane's namespace, one socat per connection.
forward() {
  socat "TCP-LISTEN:$2,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:nsenter --net=/run/netns/$NS socat STDIO TCP\:$3\:$4" >"$DIR/logs/$1.log" 2>&1 &
  echo "$! $1" >>"$DIR/pids"
}

# render FILE: tools/k8s/node/FILE with the ${VAR} of NODE_VARS replaced by
# their values; any other ${...} is a variable missing from NODE_VARS.
# shellcheck disable=SC2016 # the ${...} are envsubst's, not the shell's
render() {
  local file=$TOOLS_MOD/node/$1 v text
  for v in "${NODE_VARS[@]}"; do
    [[ -v $v ]] || ! grep -qF "\${$v}" "$file" || die "node/$1: \${$v} has no value here"
  done
  text=$(export "${NODE_VARS[@]}" && envsubst "$(printf '${%s} ' "${NODE_VARS[@]}")" <"$file")
  [[ $text != *'${'* ]] || die "node/$1: $(grep -o '[$][{][^}]*}' <<<"$text" | head -n 1) is not one of NODE_VARS"
  printf '%s\n' "$text"
}

# ---------------------------------------------------------------------------
up() {
  local bin i
  [[ ! -e $DIR/pids && ! -e /run/netns/$NS ]] || { say "a previous cluster is still here: tearing it down first"; (down); }
  build
  bin=$BIN
  mkdir -p "$DIR"/{logs,etc,pki,etcd,images,local-pv}
  # The local volumes (every Redis's AOF) on a filesystem of their own, in
  # memory: on the machine's one disk an fsync waits on etcd's and the
  # containerds' churn, which a node's own disk does not see. Like that
  # disk it outlives a node-kill; nothing here cuts the machine's power.
  mount -t tmpfs -o size=4g,mode=0755 plantstore-local-pv "$DIR/local-pv"
  : >"$DIR/pids"
  echo "$bin" >"$DIR/bin"
  echo "$NODES" >"$DIR/nodes-count"
  export PATH=$bin:$PATH

  say "recording global sysctls"
  for s in "${GLOBAL_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$DIR/sysctls"

  say "network namespace $NS (the control plane): the fabric bridge with $CP_IP, $DNS_IP on lo, $SVC_CIDR to lo, no default route"
  ip netns add "$NS"
  in_ns ip link set lo up
  in_ns ip addr add "$DNS_IP/32" dev lo
  in_ns ip route add "$SVC_CIDR" dev lo
  in_ns ip link add fabric0 type bridge
  in_ns ip addr add "$CP_IP/24" dev fabric0
  in_ns ip link set fabric0 up
  # The fabric switches frames between the nodes without the control
  # plane's iptables seeing them (its kube-proxy would take the nodes'
  # flows, which its conntrack never saw start, for invalid ones).
  in_ns sysctl -qw net.bridge.bridge-nf-call-iptables=0
  for ((i = 1; i <= NODES; i++)); do node_net "$i"; done

  say "certificates and kubeconfigs (kubeadm init phase certs, kubeconfig)"
  # shellcheck disable=SC2034 # node/kubeadm.yaml's
  KUBE_VERSION=$(kubeadm version -o short)
  NODE_IP=$CP_IP NODE_NAME=$CP_NAME NODE_DIR=$DIR render kubeadm.yaml >"$DIR/etc/kubeadm.yaml"
  {
    kubeadm init phase certs all --config "$DIR/etc/kubeadm.yaml" &&
      kubeadm init phase kubeconfig all --config "$DIR/etc/kubeadm.yaml" --kubeconfig-dir "$DIR/pki"
  } >"$DIR/logs/kubeadm.log" 2>&1 || { cat "$DIR/logs/kubeadm.log" >&2; die "kubeadm init phase certs/kubeconfig"; }
  # The add-ons kubeadm would run as pods run on the nodes, each as a user of
  # its own with a client certificate; each kubelet as its node.
  local user
  for user in kube-proxy coredns metrics-server kube-router; do
    (umask 077 && kubeadm kubeconfig user --config "$DIR/etc/kubeadm.yaml" --client-name "system:$user" >"$DIR/pki/$user.conf")
  done
  for ((i = 1; i <= NODES; i++)); do
    node_vars "$i"
    (umask 077 && kubeadm kubeconfig user --config "$DIR/etc/kubeadm.yaml" --client-name "system:node:$NODE_NAME" \
      --org system:nodes >"$DIR/pki/kubelet-$ZONE.conf")
  done
  ln -s admin.conf "$DIR/pki/kubeconfig" # the admin's in the namespace, for the scenarios
  # The host's kubeconfig goes through the loopback forward.
  sed "s#https://$API_ENDPOINT#https://127.0.0.1:$API_PORT#" "$DIR/pki/admin.conf" >"$DIR/kubeconfig"
  chmod 600 "$DIR/kubeconfig"

  say "etcd"
  start etcd etcd --name node --data-dir "$DIR/etcd" \
    --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster node=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381
  wait_for etcd 30 in_ns bash -c 'exec 3<>/dev/tcp/127.0.0.1/2379'

  say "kube-apiserver"
  # A pod on a node gone NotReady is evicted after 30 s, not the default
  # 300 s: the node-loss scenarios would otherwise wait five minutes.
  start kube-apiserver kube-apiserver \
    --bind-address=0.0.0.0 --advertise-address="$CP_IP" --secure-port="$API_SECURE_PORT" \
    --etcd-servers="$ETCD_URL" \
    --tls-cert-file="$DIR/pki/apiserver.crt" --tls-private-key-file="$DIR/pki/apiserver.key" \
    --client-ca-file="$DIR/pki/ca.crt" \
    --kubelet-client-certificate="$DIR/pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$DIR/pki/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$DIR/pki/sa.pub" --service-account-signing-key-file="$DIR/pki/sa.key" \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --authorization-mode=Node,RBAC --anonymous-auth=false \
    --enable-admission-plugins=NodeRestriction,PodSecurity \
    --default-not-ready-toleration-seconds=30 --default-unreachable-toleration-seconds=30 \
    --service-cluster-ip-range="$SVC_CIDR" --cert-dir="$DIR/pki/apiserver" --profiling=false \
    --requestheader-client-ca-file="$DIR/pki/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$DIR/pki/front-proxy-client.crt" --proxy-client-key-file="$DIR/pki/front-proxy-client.key" \
    --enable-aggregator-routing=true
  forward api-forward "$API_PORT" "$CP_IP" "$API_SECURE_PORT"
  export KUBECONFIG=$DIR/kubeconfig
  wait_for kube-apiserver 120 kubectl get --raw=/readyz
  # As kubeadm init: the admin's group made cluster admin by the one
  # identity in system:masters.
  in_ns kubectl --kubeconfig "$DIR/pki/super-admin.conf" apply -f "$TOOLS_MOD/node/cluster-admins.yaml" >/dev/null
  wait_for "the admin's access" 30 kubectl auth can-i '*' '*' --all-namespaces

  say "RBAC for CoreDNS; a default StorageClass with local volumes on every node"
  kubectl apply -f "$TOOLS_MOD/node/coredns-rbac.yaml" -f "$TOOLS_MOD/node/local-storage.yaml" >/dev/null
  # Volumes for the scenarios' Redis, 24 a node: kept (Retain) after their
  # namespaces go, every install with Redis persistence uses one up (17-19
  # in a full run, on whichever node its pod lands, and a person's own).
  local PV n
  for ((i = 1; i <= NODES; i++)); do
    node_vars "$i"
    for n in $(seq 1 24); do
      PV=$ZONE$n
      mkdir -p "$DIR/local-pv/pv$PV"
      render local-pv.yaml
      echo ---
    done
  done | kubectl apply -f - >/dev/null

  say "kube-controller-manager, kube-scheduler"
  # A node that stops reporting is NotReady after 20 s (the default 40 s).
  start kube-controller-manager kube-controller-manager \
    --kubeconfig="$DIR/pki/controller-manager.conf" \
    --authentication-kubeconfig="$DIR/pki/controller-manager.conf" \
    --authorization-kubeconfig="$DIR/pki/controller-manager.conf" \
    --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$DIR/pki/sa.key" --root-ca-file="$DIR/pki/ca.crt" \
    --cluster-signing-cert-file="$DIR/pki/ca.crt" --cluster-signing-key-file="$DIR/pki/ca.key" \
    --service-cluster-ip-range="$SVC_CIDR" --allocate-node-cidrs=false --node-monitor-grace-period=20s \
    --controllers='*,-nodeipam,-cloud-node-lifecycle' --profiling=false
  start kube-scheduler kube-scheduler \
    --kubeconfig="$DIR/pki/scheduler.conf" \
    --authentication-kubeconfig="$DIR/pki/scheduler.conf" \
    --authorization-kubeconfig="$DIR/pki/scheduler.conf" \
    --bind-address=127.0.0.1 --leader-elect=false --profiling=false

  say "OCI registry (CNCF Distribution) at $REGISTRY, in the control plane's namespace (on the fabric as $CP_IP:$REGISTRY_PORT) and forwarded from the host"
  mkdir -p "$DIR/registry"
  start registry env REGISTRY_HTTP_ADDR=":$REGISTRY_PORT" REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY="$DIR/registry" \
    registry serve "$REPO/tools/release/registry.yml"
  forward registry-forward "$REGISTRY_PORT" 127.0.0.1 "$REGISTRY_PORT"
  wait_for registry 30 curl -fsS "http://$REGISTRY/v2/"
  echo "$REGISTRY" >"$DIR/registry-address"

  say "kube-proxy of the control plane's namespace (ClusterIPs answer there too)"
  NODE_NAME=$CP_NAME NODE_IP=$CP_IP NODE_DIR=$DIR render kube-proxy.yaml >"$DIR/etc/kube-proxy.yaml"
  start kube-proxy kube-proxy --config="$DIR/etc/kube-proxy.yaml"

  say "CoreDNS on $DNS_IP"
  render Corefile >"$DIR/etc/Corefile"
  start coredns coredns -conf "$DIR/etc/Corefile"
  printf 'nameserver %s\n' "$DNS_IP" >"$DIR/etc/resolv.conf"
  wait_for CoreDNS 60 coredns_ready "$NS"

  say "images"
  local archives=()
  mapfile -t archives < <("$TOOLS_MOD/images.sh" "$DIR/images" "$bin" base | cut -f2)
  echo "${archives[@]}" >"$DIR/images-imported"
  echo base >"$DIR/images-groups"

  # Once, before the nodes start in parallel: concurrent applies of the same
  # new objects race (AlreadyExists).
  kubectl apply -f "$TOOLS_MOD/node/kube-router-rbac.yaml" >/dev/null
  local starting=()
  for ((i = 1; i <= NODES; i++)); do
    node_start "$i" &
    starting+=($!)
  done
  for i in "${starting[@]}"; do wait "$i" || die "a node failed to start (logs: $DIR/logs)"; done
  local names=()
  for ((i = 1; i <= NODES; i++)); do node_vars "$i"; names+=("node/$NODE_NAME"); done

  say "metrics-server on $CP_IP:4443 (resource metrics for HPAs, kubectl top)"
  NODE_IP=$CP_IP render metrics-server.yaml | kubectl apply -f - >/dev/null
  start metrics-server metrics-server --kubeconfig="$DIR/pki/metrics-server.conf" \
    --authentication-kubeconfig="$DIR/pki/metrics-server.conf" \
    --authorization-kubeconfig="$DIR/pki/metrics-server.conf" \
    --bind-address="$CP_IP" --secure-port=4443 --cert-dir="$DIR/metrics-server" \
    --kubelet-preferred-address-types=InternalIP --kubelet-insecure-tls --metric-resolution=15s

  wait_for "${names[*]} Ready" 120 kubectl wait --for=condition=Ready "${names[@]}" --timeout=1s
  wait_for "the metrics.k8s.io API" 60 kubectl wait --for=condition=Available apiservice/v1beta1.metrics.k8s.io --timeout=1s
  say "up: $NODES node(s) in zones ${ZONES[*]:0:NODES}; export KUBECONFIG=$DIR/kubeconfig"
}

# node_net N: node N's network namespace, its veth into the fabric, the DNS
# address on its lo and its routes (the other nodes' pod subnets through
# them, the Service range to lo); the control plane's route to its pods.
node_net() {
  local i=$1 j peer
  node_vars "$i"
  ip netns add "$NODE_NS"
  in_node "$ZONE" ip link set lo up
  ip -n "$NS" link add "veth-$ZONE" type veth peer name eth0 netns "$NODE_NS"
  ip -n "$NS" link set "veth-$ZONE" master fabric0 up
  in_node "$ZONE" ip addr add "$NODE_IP/24" dev eth0
  in_node "$ZONE" ip link set eth0 up
  in_node "$ZONE" ip addr add "$DNS_IP/32" dev lo
  in_node "$ZONE" ip route add "$SVC_CIDR" dev lo
  in_node "$ZONE" sysctl -qw net.ipv4.ip_forward=1
  # The bridge's traffic through iptables (the namespace's own setting), so
  # that a Service's reply from a pod on the same bridge is un-NATed, and
  # pod-to-pod traffic on the bridge meets kube-router's NetworkPolicy chains.
  in_node "$ZONE" ip link add cni0 type bridge
  in_node "$ZONE" sysctl -qw net.bridge.bridge-nf-call-iptables=1
  in_node "$ZONE" ip link del cni0
  in_ns ip route add "$POD_CIDR" via "$NODE_IP"
  for ((j = 1; j <= NODES; j++)); do
    ((j == i)) && continue
    peer=10.87.0.1$j
    in_node "$ZONE" ip route add "10.88.$j.0/24" via "$peer"
  done
}

# node_start N: node N's containerd (pulling only from the cluster's
# registry), images, kubelet, kube-proxy, CoreDNS and kube-router; also what
# boots a killed node again.
node_start() {
  local i=$1 c
  node_vars "$i"
  local z=$ZONE archives
  mkdir -p "$NODE_DIR"/{etc,kubelet,containerd,cni/net.d,cni/ipam,pod-logs}
  # containerd's per-registry configuration: plain HTTP to the registry, on the fabric.
  mkdir -p "$NODE_DIR/etc/certs.d/$REGISTRY"
  render registry-hosts.toml >"$NODE_DIR/etc/certs.d/$REGISTRY/hosts.toml"
  render containerd.toml >"$NODE_DIR/etc/containerd.toml"
  render 10-plantstore.conflist >"$NODE_DIR/cni/net.d/10-plantstore.conflist"
  # A dead proxy: an image missing from the node fails at once, never pulls
  # from beyond the machine (Go never proxies loopback or the fabric's
  # addresses listed in NO_PROXY, so the registry is reached directly).
  start_in "$NODE_NS" "containerd-$z" env HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY="$CP_IP" \
    containerd --config "$NODE_DIR/etc/containerd.toml"
  wait_for "containerd of $NODE_NAME" 30 ctr --address "$NODE_DIR/containerd/containerd.sock" version
  read -r -a archives <"$DIR/images-imported"
  node_import "$z" "${archives[@]}" >/dev/null

  for c in /sys/fs/cgroup/*/; do
    [[ -f $c/cgroup.procs ]] || continue
    mkdir -p "$c$NS" "$c${CGROUP_ROOT#/}"
    if [[ -f $c/cpuset.cpus ]]; then # cgroup v1 cpuset starts empty
      [[ -n $(cat "$c$NS/cpuset.cpus") ]] || { cat "$c/cpuset.cpus" >"$c$NS/cpuset.cpus"; cat "$c/cpuset.mems" >"$c$NS/cpuset.mems"; }
      cat "$c/cpuset.cpus" >"$c${CGROUP_ROOT#/}/cpuset.cpus"
      cat "$c/cpuset.mems" >"$c${CGROUP_ROOT#/}/cpuset.mems"
    fi
  done
  render kubelet.yaml >"$NODE_DIR/etc/kubelet.yaml"
  start_in "$NODE_NS" "kubelet-$z" kubelet --config="$NODE_DIR/etc/kubelet.yaml" \
    --kubeconfig="$DIR/pki/kubelet-$z.conf" \
    --root-dir="$NODE_DIR/kubelet" --cert-dir="$NODE_DIR/kubelet/pki" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --node-labels="topology.kubernetes.io/zone=$z"
  render kube-proxy.yaml >"$NODE_DIR/etc/kube-proxy.yaml"
  start_in "$NODE_NS" "kube-proxy-$z" kube-proxy --config="$NODE_DIR/etc/kube-proxy.yaml"
  start_in "$NODE_NS" "coredns-$z" coredns -conf "$DIR/etc/Corefile"
  wait_for "node $NODE_NAME registered" 120 kubectl get "node/$NODE_NAME"
  # NetworkPolicy: kube-router's policy controller alone (no BGP, no service
  # proxy), its rules in the node's namespace. It reads the node's address
  # from the Node object, so starts once the kubelet registered it; ready
  # once healthy and hooked into the filter table (RBAC applied by up).
  start_in "$NODE_NS" "kube-router-$z" kube-router --kubeconfig="$DIR/pki/kube-router.conf" \
    --hostname-override="$NODE_NAME" --run-firewall=true --run-router=false --run-service-proxy=false \
    --service-cluster-ip-range="$SVC_CIDR" --health-port=20244 --metrics-port=0
  wait_for "kube-router of $NODE_NAME" 60 in_node "$z" sh -c 'curl -sf http://127.0.0.1:20244/healthz && iptables -S FORWARD | grep -q KUBE-ROUTER-FORWARD'
  wait_for "CoreDNS of $NODE_NAME" 60 coredns_ready "$NODE_NS"
  echo "node $NODE_NAME started" >"$NODE_DIR/started"
}

# node_kill NODE: the node dies at once, as a machine that lost power: its
# processes and its pods' containers killed (nothing is told), its veth's
# end on the fabric down. Its Node object and pods stay, as the control
# plane sees them, until the node controller marks it NotReady and evicts.
node_kill() {
  local i pid name
  i=$(node_index "$1")
  node_vars "$i"
  ip -n "$NS" link set "veth-$ZONE" down
  while read -r pid name; do
    [[ $name == *-"$ZONE" ]] && kill -9 "$pid" 2>/dev/null
  done <"$DIR/pids"
  grep -v -- "-$ZONE\$" "$DIR/pids" >"$DIR/pids.new" || true
  mv "$DIR/pids.new" "$DIR/pids"
  kill_containers "$NODE_DIR/containerd/containerd.sock" "$CGROUP_ROOT"
  rm -f "$NODE_DIR/started"
  say "node $NODE_NAME killed"
}

# node_boot NODE: a killed node boots: its link up, its processes started
# again on their old state, as a rebooted node's.
node_boot() {
  local i
  i=$(node_index "$1")
  node_vars "$i"
  [[ ! -e $NODE_DIR/started ]] || die "node $NODE_NAME is running"
  PATH=$(cat "$DIR/bin"):$PATH
  export PATH KUBECONFIG=$DIR/kubeconfig
  ip -n "$NS" link set "veth-$ZONE" up
  node_start "$i"
  wait_for "node $NODE_NAME Ready" 120 kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
  say "node $NODE_NAME booted and Ready"
}

# kill_containers SOCK CGROUP_ROOT: containerd's shims outlive it: those
# serving the containerd at SOCK ("... -address SOCK" on their command
# line), then whatever still runs in the pods' cgroups under CGROUP_ROOT.
kill_containers() {
  local sock=$1 root=$2 pid procs
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $sock( |$)" || true); do
    kill -9 "$pid" 2>/dev/null || true
  done
  # A killed shim can leave a container's cgroup frozen (runc freezes it to
  # signal every process): a frozen process takes no SIGKILL until thawed
  # (seen once: a restarting operator, left in state D).
  find "/sys/fs/cgroup/freezer$root" -name freezer.state 2>/dev/null |
    while read -r f; do [[ $(cat "$f") == THAWED ]] || echo THAWED >"$f" 2>/dev/null || true; done
  for _ in $(seq 20); do
    procs=$(find /sys/fs/cgroup/*"$root" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
    [[ -n $procs ]] || break
    # shellcheck disable=SC2086 # one pid a word
    kill -9 $procs 2>/dev/null || true
    sleep 0.25
  done
}

# import ARCHIVE...: OCI archives into every node's containerd (namespace
# k8s.io), the nodes in parallel.
import() {
  local i rc=0 job importing=()
  for ((i = 1; i <= NODES; i++)); do
    node_vars "$i"
    node_import "$ZONE" "$@" &
    importing+=($!)
  done
  for job in "${importing[@]}"; do wait "$job" || rc=1; done
  ((rc == 0)) || die "import into a node failed"
  printf 'imported %s\n' "$@"
}
# images GROUP...: the images of each group (images.sh) the nodes do not
# have yet, their tools built first (or waited for: build.sh's lock),
# imported into every node and recorded in images-imported, which a node
# that boots again imports. Concurrent calls take turns.
images() {
  local g t todo=() tools=() archives=() lock
  exec {lock}>"$DIR/images.lock"
  flock "$lock"
  for g in "$@"; do
    [[ -n ${GROUP_TOOLS[$g]:-} ]] || die "images: no group $g (${!GROUP_TOOLS[*]})"
    grep -qxF "$g" "$DIR/images-groups" || { todo+=("$g"); read -r -a t <<<"${GROUP_TOOLS[$g]}"; tools+=("${t[@]}"); }
  done
  ((${#todo[@]})) || return 0
  K8S_TOOLS_CACHE=$CACHE "$TOOLS_MOD/build.sh" "${tools[@]}" >/dev/null
  mapfile -t archives < <("$TOOLS_MOD/images.sh" "$DIR/images" "$(cat "$DIR/bin")" "${todo[@]}" | cut -f2)
  import "${archives[@]}" >/dev/null
  echo "$(cat "$DIR/images-imported") ${archives[*]}" >"$DIR/images-imported.new"
  mv "$DIR/images-imported.new" "$DIR/images-imported"
  printf '%s\n' "${todo[@]}" >>"$DIR/images-groups"
  say "images ${todo[*]}: imported"
}
node_import() {
  local z=$1 a; shift
  for a in "$@"; do
    ctr --address "$DIR/nodes/$z/containerd/containerd.sock" -n k8s.io images import --no-unpack=false "$a" >/dev/null ||
      die "import $a into node $z"
  done
}

# ---------------------------------------------------------------------------
down() {
  local pid name s i
  # The cluster's own node count, whatever CLUSTER_NODES says now.
  [[ ! -f $DIR/nodes-count ]] || NODES=$(cat "$DIR/nodes-count")
  # Best effort throughout: one step failing must not leave the rest undone.
  set +e
  say "tearing down"
  # Containers first, while each containerd still answers.
  for ((i = 1; i <= NODES; i++)); do
    node_vars "$i"
    local sock=$NODE_DIR/containerd/containerd.sock ids
    [[ -S $sock ]] || continue
    ids=$(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)
    for id in $ids; do ctr --address "$sock" -n k8s.io tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
  done
  # Our processes, newest first.
  if [[ -f $DIR/pids ]]; then
    tac "$DIR/pids" | while read -r pid name; do kill "$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do
      local alive=0
      while read -r pid name; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$DIR/pids"
      ((alive)) || break
      sleep 0.2
    done
    while read -r pid name; do kill -9 "$pid" 2>/dev/null || true; done <"$DIR/pids"
    rm -f "$DIR/pids"
  fi
  for ((i = 1; i <= NODES; i++)); do
    node_vars "$i"
    kill_containers "$NODE_DIR/containerd/containerd.sock" "$CGROUP_ROOT"
  done
  sleep 0.5 # the kernel reaps them before their cgroups can go
  # Whatever is still mounted below the state directory (volumes, rootfs,
  # the sandboxes' namespaces), deepest first.
  for _ in 1 2 3; do
    findmnt -rn -o TARGET | grep -E "^$DIR/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  done
  # The kubelets' links to the pods' logs (always in /var/log/containers).
  find /var/log/containers -maxdepth 1 -lname "$DIR/*" -delete 2>/dev/null
  # The nodes' namespaces, then the control plane's.
  for ((i = 1; i <= NODES; i++)); do
    node_vars "$i"
    if [[ -e /run/netns/$NODE_NS ]]; then ip netns del "$NODE_NS"; fi
  done
  if [[ -e /run/netns/$NS ]]; then ip netns del "$NS"; fi
  for s in /sys/fs/cgroup/*/"$NS"; do
    [[ -d $s ]] || continue
    find "$s" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  if [[ -f $DIR/sysctls ]]; then
    while IFS='=' read -r name value; do sysctl -qw "$name=$value" || true; done <"$DIR/sysctls"
    rm -f "$DIR/sysctls"
  fi
  rm -rf "$DIR"
  say "down"
  set -e
}

# partition [--one-way] ZONE... [-- ZONE...]: in each named zone's node, a
# mangle chain drops what leaves its link for the other side's nodes and pod
# subnets and the control plane (after DNAT: a Service's ClusterIP is cut as
# its endpoints are), and, unless --one-way, what arrives from them. The
# node goes NotReady and its pods' endpoints go, as in a real cluster.
partition() {
  local oneway=0 cut=() others=() z i j addr
  [[ ${1:-} == --one-way ]] && { oneway=1; shift; }
  while (($#)) && [[ $1 != -- ]]; do cut+=("$(node_index "$1")"); shift; done
  ((${#cut[@]})) || die "partition [--one-way] ZONE... [-- ZONE...]"
  if [[ ${1:-} == -- ]]; then
    shift
    for z in "$@"; do others+=("$(node_index "$z")"); done
  else
    for ((j = 1; j <= NODES; j++)); do [[ " ${cut[*]} " == *" $j "* ]] || others+=("$j"); done
  fi
  for i in "${cut[@]}"; do
    node_vars "$i"
    partition_chains "$ZONE"
    for addr in "$CP_IP" $(for j in "${others[@]}"; do echo "10.87.0.1$j 10.88.$j.0/24"; done); do
      in_node "$ZONE" iptables -w -t mangle -A PLANTSTORE-CUT-OUT -o eth0 -d "$addr" -j DROP
      ((oneway)) || in_node "$ZONE" iptables -w -t mangle -A PLANTSTORE-CUT-IN -i eth0 -s "$addr" -j DROP
    done
  done
  say "partition: $(for i in "${cut[@]}"; do node_vars "$i"; printf '%s ' "$ZONE"; done)cut off from $(for j in "${others[@]}"; do node_vars "$j"; printf '%s ' "$ZONE"; done)and the control plane$( ((oneway)) && echo ", one way (what they send)")"
}

# partition_chains ZONE: the node's two (empty) chains, hooked once.
partition_chains() {
  local c hook
  for c in IN:PREROUTING OUT:POSTROUTING; do
    hook=${c#*:} c=PLANTSTORE-CUT-${c%%:*}
    in_node "$1" iptables -w -t mangle -N "$c" 2>/dev/null || in_node "$1" iptables -w -t mangle -F "$c"
    in_node "$1" iptables -w -t mangle -C "$hook" -j "$c" 2>/dev/null || in_node "$1" iptables -w -t mangle -I "$hook" -j "$c"
  done
}

heal() {
  local i c
  for ((i = 1; i <= NODES; i++)); do
    node_vars "$i"
    for c in IN OUT; do in_node "$ZONE" iptables -w -t mangle -F "PLANTSTORE-CUT-$c" 2>/dev/null || true; done
  done
  say "healed: no partition"
}

nodes() {
  local i
  for ((i = 1; i <= NODES; i++)); do
    node_vars "$i"
    echo "$NODE_NAME $ZONE $NODE_NS $NODE_DIR/containerd/containerd.sock"
  done
}

status() {
  [[ -f $DIR/pids ]] || { echo "no cluster in $DIR"; return 1; }
  check_alive && KUBECONFIG=$DIR/kubeconfig PATH=$(cat "$DIR/bin"):$PATH kubectl get nodes -o wide
}

# A cluster that is up has its own node count, whatever CLUSTER_NODES says now.
[[ ${1:-} == up || ${1:-} == build || ! -f $DIR/nodes-count ]] || NODES=$(cat "$DIR/nodes-count")
case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  import) shift; import "$@" ;;
  images) shift; images "$@" ;;
  late-tools) late_tools ;;
  nodes) nodes ;;
  node-kill) node_kill "${2:?node-kill NODE}" ;;
  node-start) node_boot "${2:?node-start NODE}" ;;
  partition) shift; partition "$@" ;;
  heal) heal ;;
  build) build; echo "$BIN" ;;
  *) sed -n '2,/^set -euo/p' "$SELF" | sed '$d'; exit 2 ;;
esac
