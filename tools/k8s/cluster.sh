#!/usr/bin/env bash
# A real one-node Kubernetes v1.31 cluster on this machine, for the chart's
# tests and for a person who wants to try the chart on a real kubelet with no
# Docker, no registry and no network: every component is built from the Go
# modules pinned in tools/k8s (CoreDNS in tools/k8s/coredns), containerd and
# runc come from Debian, and every image is built here and imported into the
# node's containerd. Its certificates and kubeconfigs come from kubeadm's
# `init phase certs` and `init phase kubeconfig`, its configuration files and
# bootstrap manifests from tools/k8s/node/. See docs/validation.md.
#
#   tools/k8s/cluster.sh up      build what is missing, start the node, print
#                                how to reach it (KUBECONFIG)
#   tools/k8s/cluster.sh down    stop it and remove every trace of it
#   tools/k8s/cluster.sh status  is it up
#   tools/k8s/cluster.sh import ARCHIVE...  import OCI image archives
#
# Everything runs inside a network namespace of its own ($CLUSTER_NETNS):
# only lo (holding the node's IP and the DNS IP) and the pods' bridge, no
# default route, so nothing the cluster runs can reach beyond this machine,
# and kube-proxy's rules, kube-router's NetworkPolicy rules and ipsets,
# routes and namespaced sysctls stay in there. The
# host reaches the API server through a loopback forward (socat). Teardown
# stops only the processes this script started (their PIDs are recorded)
# and the containers of its own containerd, unmounts what the kubelet
# mounted, removes the namespace and its cgroups, and restores the three
# global sysctls the kubelet changes. A second `up` starts clean.
#
# Environment:
#   CLUSTER_DIR     state, logs and data (default /tmp/plantstore-cluster)
#   CLUSTER_CACHE   built binaries (default ${XDG_CACHE_HOME:-/tmp}/plantstore-k8s)
#   CLUSTER_NETNS   network namespace name (default plantstore-k8s)
#   CLUSTER_API_PORT  host loopback port of the API server (default 16443)
#   CLUSTER_REGISTRY_PORT  loopback port of the node's OCI registry, the same
#                   number in the namespace and on the host (default 15000)
# Two clusters with different CLUSTER_DIR, CLUSTER_NETNS, CLUSTER_API_PORT
# and CLUSTER_REGISTRY_PORT can run side by side: their addresses live in
# separate namespaces.
#
# The node has a real OCI registry (CNCF Distribution, tools/release/go.mod)
# at 127.0.0.1:$CLUSTER_REGISTRY_PORT, forwarded from the host's loopback so
# that `make release` pushes to the very name the node pulls from; containerd
# reaches it through its registry configuration (certs.d/HOST/hosts.toml),
# and pods pull from it by digest as on any cluster.
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

# The node's addresses, all inside the namespace.
NODE_NAME=plantstore-node
NODE_IP=10.87.0.1      # on lo
API_SECURE_PORT=6443   # the API server's, on NODE_IP
API_ENDPOINT=$NODE_IP:$API_SECURE_PORT
ETCD_URL=http://127.0.0.1:2379
# shellcheck disable=SC2034 # named by tools/k8s/node/ (NODE_VARS below)
POD_CIDR=10.88.0.0/16  # the bridge cni0, gateway 10.88.0.1
# Routed to lo, so the node's own ClusterIP connections work; its first
# address is the API server's Service (kubeadm puts it in the certificate).
SVC_CIDR=10.96.0.0/16
DNS_IP=10.96.0.10      # on lo; CoreDNS runs on the node
CGROUP_ROOT=/$NS        # the pods' cgroups, in every hierarchy
GLOBAL_SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory)
# The variables tools/k8s/node/'s files may name as ${VAR}; KUBE_VERSION is
# kubeadm's own, PV a local volume's number.
NODE_VARS=(DIR NODE_NAME NODE_IP API_SECURE_PORT API_ENDPOINT ETCD_URL POD_CIDR SVC_CIDR DNS_IP CGROUP_ROOT REGISTRY KUBE_VERSION PV)

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
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

# build sets BIN: the Kubernetes tools and CoreDNS from tools/k8s/build.sh's
# cache, and this module's own small commands beside them.
build() {
  install_packages
  BIN=$(K8S_TOOLS_CACHE=$CACHE "$TOOLS_MOD/build.sh" kubeadm kube-apiserver kube-controller-manager kube-scheduler \
    kubelet kube-proxy kubectl helm helm4 coredns metrics-server kube-router policy-controller | tail -n 1)
  # Seconds from Go's build cache, so always rebuilt.
  # Prometheus and the Prometheus Operator, Jaeger and the OpenTelemetry
  # Collector, for the images of the Prometheus and tracing scenarios
  # (cluster-test.d/60-prometheus.sh, 65-tracing.sh), the Redis exporter's for
  # the Prometheus scenario, and Flux's controllers for the Flux scenario
  # (15-flux.sh); the same cache directory.
  K8S_TOOLS_CACHE=$CACHE "$TOOLS_MOD/build.sh" prometheus prometheus-operator prometheus-config-reloader jaeger otelcol \
    source-controller helm-controller redis-exporter >/dev/null
  (cd "$TOOLS_MOD" && CGO_ENABLED=0 go build -trimpath -o "$BIN/" ./cmd/k8s-pause ./cmd/k8s-load ./cmd/k8s-webhook-receiver ./cmd/k8s-gitops-phases)
  # The node's registry, from the release tools' module.
  (cd "$REPO/tools/release" && go build -trimpath -o "$BIN/" github.com/distribution/distribution/v3/cmd/registry)
}

# ---------------------------------------------------------------------------
# processes: start NAME CMD... runs CMD in the namespace in the background,
# logs to $DIR/logs/NAME.log, and records its PID.
start() {
  local name=$1; shift
  nsenter --net="/run/netns/$NS" "$@" >"$DIR/logs/$name.log" 2>&1 &
  echo "$! $name" >>"$DIR/pids"
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

check_alive() {
  local pid name
  while read -r pid name; do
    kill -0 "$pid" 2>/dev/null || { tail -n 30 "$DIR/logs/$name.log" >&2; die "$name (pid $pid) exited; log: $DIR/logs/$name.log"; }
  done <"$DIR/pids"
}

in_ns() { nsenter --net="/run/netns/$NS" "$@"; }

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
  local bin
  [[ ! -e $DIR/pids && ! -e /run/netns/$NS ]] || { say "a previous cluster is still here: tearing it down first"; down; }
  build
  bin=$BIN
  mkdir -p "$DIR"/{logs,etc,pki,etcd,kubelet,containerd,cni/net.d,cni/ipam,images,local-pv}
  : >"$DIR/pids"
  echo "$bin" >"$DIR/bin"
  export PATH=$bin:$PATH

  say "recording global sysctls"
  for s in "${GLOBAL_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$DIR/sysctls"

  say "network namespace $NS: lo with $NODE_IP and $DNS_IP, $SVC_CIDR to lo, no default route"
  ip netns add "$NS"
  in_ns ip link set lo up
  in_ns ip addr add "$NODE_IP/32" dev lo
  in_ns ip addr add "$DNS_IP/32" dev lo
  in_ns ip route add "$SVC_CIDR" dev lo
  in_ns sysctl -qw net.ipv4.ip_forward=1
  # The bridge's traffic through iptables, so that a pod reaching a Service
  # backed by a pod on the same bridge is un-NATed on the way back, and so
  # that pod-to-pod traffic switched by the bridge meets kube-router's
  # NetworkPolicy chains (the setting is the namespace's own).
  in_ns ip link add cni0 type bridge
  in_ns sysctl -qw net.bridge.bridge-nf-call-iptables=1
  in_ns ip link del cni0

  say "certificates and kubeconfigs (kubeadm init phase certs, kubeconfig)"
  # shellcheck disable=SC2034 # node/kubeadm.yaml's
  KUBE_VERSION=$(kubeadm version -o short)
  render kubeadm.yaml >"$DIR/etc/kubeadm.yaml"
  {
    kubeadm init phase certs all --config "$DIR/etc/kubeadm.yaml" &&
      kubeadm init phase kubeconfig all --config "$DIR/etc/kubeadm.yaml" --kubeconfig-dir "$DIR/pki"
  } >"$DIR/logs/kubeadm.log" 2>&1 || { cat "$DIR/logs/kubeadm.log" >&2; die "kubeadm init phase certs/kubeconfig"; }
  # The add-ons kubeadm would run as pods run on the node, each as a user of
  # its own with a client certificate.
  local user
  for user in kube-proxy coredns metrics-server kube-router; do
    (umask 077 && kubeadm kubeconfig user --config "$DIR/etc/kubeadm.yaml" --client-name "system:$user" >"$DIR/pki/$user.conf")
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
  start kube-apiserver kube-apiserver \
    --bind-address=0.0.0.0 --advertise-address="$NODE_IP" --secure-port="$API_SECURE_PORT" \
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
    --service-cluster-ip-range="$SVC_CIDR" --cert-dir="$DIR/pki/apiserver" --profiling=false \
    --requestheader-client-ca-file="$DIR/pki/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$DIR/pki/front-proxy-client.crt" --proxy-client-key-file="$DIR/pki/front-proxy-client.key" \
    --enable-aggregator-routing=true
  # The host's side of the forward: one socat per connection into the namespace.
  socat "TCP-LISTEN:$API_PORT,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:nsenter --net=/run/netns/$NS socat STDIO TCP\:$NODE_IP\:$API_SECURE_PORT" >"$DIR/logs/api-forward.log" 2>&1 &
  echo "$! api-forward" >>"$DIR/pids"
  export KUBECONFIG=$DIR/kubeconfig
  wait_for kube-apiserver 120 kubectl get --raw=/readyz
  # As kubeadm init: the admin's group made cluster admin by the one
  # identity in system:masters.
  in_ns kubectl --kubeconfig "$DIR/pki/super-admin.conf" apply -f "$TOOLS_MOD/node/cluster-admins.yaml" >/dev/null
  wait_for "the admin's access" 30 kubectl auth can-i '*' '*' --all-namespaces

  say "RBAC for CoreDNS; a default StorageClass with local volumes"
  kubectl apply -f "$TOOLS_MOD/node/coredns-rbac.yaml" -f "$TOOLS_MOD/node/local-storage.yaml" >/dev/null
  # One volume a Redis of a scenario claims: the volumes are kept (Retain)
  # after their namespaces go, so every install that enables Redis
  # persistence uses one up (release, install, gitops, flux, values,
  # overlays, netpol, prometheus, tracing, skaffold: 14-16 in a full run,
  # and a person's own installs).
  local PV
  for PV in $(seq 1 24); do
    mkdir -p "$DIR/local-pv/pv$PV"
    render local-pv.yaml
    echo ---
  done | kubectl apply -f - >/dev/null

  say "kube-controller-manager, kube-scheduler"
  start kube-controller-manager kube-controller-manager \
    --kubeconfig="$DIR/pki/controller-manager.conf" \
    --authentication-kubeconfig="$DIR/pki/controller-manager.conf" \
    --authorization-kubeconfig="$DIR/pki/controller-manager.conf" \
    --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$DIR/pki/sa.key" --root-ca-file="$DIR/pki/ca.crt" \
    --cluster-signing-cert-file="$DIR/pki/ca.crt" --cluster-signing-key-file="$DIR/pki/ca.key" \
    --service-cluster-ip-range="$SVC_CIDR" --allocate-node-cidrs=false \
    --controllers='*,-nodeipam,-cloud-node-lifecycle' --profiling=false
  start kube-scheduler kube-scheduler \
    --kubeconfig="$DIR/pki/scheduler.conf" \
    --authentication-kubeconfig="$DIR/pki/scheduler.conf" \
    --authorization-kubeconfig="$DIR/pki/scheduler.conf" \
    --bind-address=127.0.0.1 --leader-elect=false --profiling=false

  say "OCI registry (CNCF Distribution) at $REGISTRY, in the namespace and forwarded from the host"
  mkdir -p "$DIR/registry"
  start registry env REGISTRY_HTTP_ADDR="$REGISTRY" REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY="$DIR/registry" \
    registry serve "$REPO/tools/release/registry.yml"
  socat "TCP-LISTEN:$REGISTRY_PORT,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:nsenter --net=/run/netns/$NS socat STDIO TCP\:127.0.0.1\:$REGISTRY_PORT" >"$DIR/logs/registry-forward.log" 2>&1 &
  echo "$! registry-forward" >>"$DIR/pids"
  wait_for registry 30 curl -fsS "http://$REGISTRY/v2/"
  # containerd's per-registry configuration: plain HTTP to this one.
  mkdir -p "$DIR/etc/certs.d/$REGISTRY"
  render registry-hosts.toml >"$DIR/etc/certs.d/$REGISTRY/hosts.toml"
  echo "$REGISTRY" >"$DIR/registry-address"

  say "containerd (its own root, state and socket; pulls only from the node's registry)"
  render containerd.toml >"$DIR/etc/containerd.toml"
  render 10-plantstore.conflist >"$DIR/cni/net.d/10-plantstore.conflist"
  # A dead proxy: an image missing from the node fails at once, never pulls
  # from beyond the machine (Go never proxies loopback, so the node's
  # registry is reached directly).
  start containerd env HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY= \
    containerd --config "$DIR/etc/containerd.toml"
  wait_for containerd 30 ctr --address "$DIR/containerd/containerd.sock" version

  say "images"
  local archives=()
  mapfile -t archives < <("$TOOLS_MOD/images.sh" "$DIR/images" "$bin" | cut -f2)
  import "${archives[@]}"

  say "kubelet (cgroups under $CGROUP_ROOT)"
  local c
  for c in /sys/fs/cgroup/*/; do
    [[ -f $c/cgroup.procs ]] || continue
    mkdir -p "$c${CGROUP_ROOT#/}"
    if [[ -f $c/cpuset.cpus ]]; then # cgroup v1 cpuset starts empty
      cat "$c/cpuset.cpus" >"$c${CGROUP_ROOT#/}/cpuset.cpus"
      cat "$c/cpuset.mems" >"$c${CGROUP_ROOT#/}/cpuset.mems"
    fi
  done
  printf 'nameserver %s\n' "$DNS_IP" >"$DIR/etc/resolv.conf"
  render kubelet.yaml >"$DIR/etc/kubelet.yaml"
  start kubelet kubelet --config="$DIR/etc/kubelet.yaml" \
    --kubeconfig="$DIR/pki/kubelet.conf" \
    --root-dir="$DIR/kubelet" --cert-dir="$DIR/kubelet/pki" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP"

  say "kube-proxy (iptables)"
  render kube-proxy.yaml >"$DIR/etc/kube-proxy.yaml"
  start kube-proxy kube-proxy --config="$DIR/etc/kube-proxy.yaml"

  say "CoreDNS on $DNS_IP"
  render Corefile >"$DIR/etc/Corefile"
  start coredns coredns -conf "$DIR/etc/Corefile"

  say "metrics-server on $NODE_IP:4443 (resource metrics for HPAs, kubectl top)"
  render metrics-server.yaml | kubectl apply -f - >/dev/null
  start metrics-server metrics-server --kubeconfig="$DIR/pki/metrics-server.conf" \
    --authentication-kubeconfig="$DIR/pki/metrics-server.conf" \
    --authorization-kubeconfig="$DIR/pki/metrics-server.conf" \
    --bind-address="$NODE_IP" --secure-port=4443 --cert-dir="$DIR/metrics-server" \
    --kubelet-preferred-address-types=InternalIP --kubelet-insecure-tls --metric-resolution=15s

  wait_for "node $NODE_NAME Ready" 120 kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
  # NetworkPolicy: kube-router's network policy controller alone (no BGP
  # routing, no service proxy: the bridge and kube-proxy stay as they are),
  # iptables and ipset rules in the namespace. It reads its node's address
  # from the Node object, so it starts once the kubelet has registered it;
  # ready once it answers its health check and has hooked its chains into
  # the filter table.
  kubectl apply -f "$TOOLS_MOD/node/kube-router-rbac.yaml" >/dev/null
  say "kube-router: the NetworkPolicy controller only (iptables + ipset)"
  start kube-router kube-router --kubeconfig="$DIR/pki/kube-router.conf" \
    --hostname-override="$NODE_NAME" --run-firewall=true --run-router=false --run-service-proxy=false \
    --service-cluster-ip-range="$SVC_CIDR" --health-port=20244 --metrics-port=0
  wait_for kube-router 60 in_ns sh -c 'curl -sf http://127.0.0.1:20244/healthz && iptables -S FORWARD | grep -q KUBE-ROUTER-FORWARD'
  wait_for "the metrics.k8s.io API" 60 kubectl wait --for=condition=Available apiservice/v1beta1.metrics.k8s.io --timeout=1s
  wait_for CoreDNS 60 in_ns bash -c 'exec 3<>/dev/tcp/127.0.0.1/8182 && printf "GET /ready HTTP/1.0\r\n\r\n" >&3 && grep -q "200 OK" <&3'
  say "up: export KUBECONFIG=$DIR/kubeconfig"
}

# import ARCHIVE...: OCI archives into the node's containerd (namespace k8s.io).
import() {
  local a
  for a in "$@"; do
    ctr --address "$DIR/containerd/containerd.sock" -n k8s.io images import --no-unpack=false "$a" >/dev/null ||
      die "import $a"
    echo "imported $a"
  done
}

# ---------------------------------------------------------------------------
down() {
  local pid name s sock=$DIR/containerd/containerd.sock
  # Best effort throughout: one step failing must not leave the rest undone.
  set +e
  say "tearing down"
  # Containers first, while containerd still answers.
  if [[ -S $sock ]]; then
    local ids
    ids=$(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)
    for id in $ids; do ctr --address "$sock" -n k8s.io tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
  fi
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
  # containerd's shims outlive it: only those serving our containerd (their
  # command line is "containerd-shim-runc-v2 -namespace k8s.io -id ID
  # -address SOCK"), then whatever still runs in the pods' cgroups.
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $sock( |$)" || true); do
    kill -9 "$pid" 2>/dev/null || true
  done
  # A killed shim can leave a container's cgroup frozen (runc freezes it to
  # signal every process): a frozen process takes no SIGKILL until thawed
  # (seen once: a restarting operator, left in state D).
  find "/sys/fs/cgroup/freezer$CGROUP_ROOT" -name freezer.state 2>/dev/null |
    while read -r f; do [[ $(cat "$f") == THAWED ]] || echo THAWED >"$f" 2>/dev/null || true; done
  local procs
  for _ in $(seq 20); do
    procs=$(find /sys/fs/cgroup/*"$CGROUP_ROOT" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
    [[ -n $procs ]] || break
    # shellcheck disable=SC2086 # one pid a word
    kill -9 $procs 2>/dev/null || true
    sleep 0.25
  done
  sleep 0.5 # the kernel reaps them before their cgroups can go
  # Whatever is still mounted below the state directory (volumes, rootfs,
  # the sandboxes' namespaces), deepest first.
  for _ in 1 2 3; do
    findmnt -rn -o TARGET | grep -E "^$DIR/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  done
  # The kubelet's links to the pods' logs (always in /var/log/containers).
  find /var/log/containers -maxdepth 1 -lname "$DIR/*" -delete 2>/dev/null
  # The pods' network namespaces that containerd left, then ours.
  if [[ -e /run/netns/$NS ]]; then ip netns del "$NS"; fi
  for s in /sys/fs/cgroup/*"$CGROUP_ROOT"; do
    [[ -d $s ]] || continue
    find "$s" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  if [[ -f $DIR/sysctls ]]; then
    while IFS== read -r name value; do sysctl -qw "$name=$value" || true; done <"$DIR/sysctls"
    rm -f "$DIR/sysctls"
  fi
  rm -rf "$DIR"
  say "down"
  set -e
}

status() {
  [[ -f $DIR/pids ]] || { echo "no cluster in $DIR"; return 1; }
  check_alive && KUBECONFIG=$DIR/kubeconfig PATH=$(cat "$DIR/bin"):$PATH kubectl get nodes -o wide
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  import) shift; import "$@" ;;
  build) build; echo "$BIN" ;;
  *) sed -n '2,30p' "$SELF"; exit 2 ;;
esac
