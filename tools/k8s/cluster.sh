#!/usr/bin/env bash
# A real one-node Kubernetes v1.31 cluster on this machine, for the chart's
# tests and for a person who wants to try the chart on a real kubelet with no
# Docker, no registry and no network: every component is built from the Go
# modules pinned in tools/k8s (CoreDNS in tools/k8s/coredns), containerd and
# runc come from Debian, and every image is built here and imported into the
# node's containerd. See docs/validation.md.
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
POD_CIDR=10.88.0.0/16  # the bridge cni0, gateway 10.88.0.1
SVC_CIDR=10.96.0.0/16  # routed to lo, so the node's own ClusterIP connections work
API_SVC_IP=10.96.0.1
DNS_IP=10.96.0.10      # on lo; CoreDNS runs on the node
CGROUP_ROOT=/$NS        # the pods' cgroups, in every hierarchy
GLOBAL_SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory)

t0=$SECONDS
say() { printf '== [%4ss] %s\n' "$((SECONDS - t0))" "$*"; }
die() { echo "cluster: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root (network namespace, containerd, kubelet)"

# ---------------------------------------------------------------------------
install_packages() {
  local need=() p
  declare -A PKG=([containerd]=containerd [runc]=runc [etcd]=etcd-server [socat]=socat [conntrack]=conntrack
    [iptables]=iptables [ipset]=ipset [nsenter]=util-linux [buildah]=buildah [busybox]=busybox-static
    [redis-server]=redis-server [curl]=curl [jq]=jq [ip]=iproute2)
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
  BIN=$(K8S_TOOLS_CACHE=$CACHE "$TOOLS_MOD/build.sh" kube-apiserver kube-controller-manager kube-scheduler \
    kubelet kube-proxy kubectl helm helm4 coredns metrics-server kube-router policy-controller | tail -n 1)
  # Seconds from Go's build cache, so always rebuilt.
  # Prometheus and the Prometheus Operator, Jaeger and the OpenTelemetry
  # Collector, for the images of the Prometheus and tracing scenarios
  # (cluster-test.d/60-prometheus.sh, 65-tracing.sh); the same cache directory.
  K8S_TOOLS_CACHE=$CACHE "$TOOLS_MOD/build.sh" prometheus prometheus-operator prometheus-config-reloader jaeger otelcol >/dev/null
  (cd "$TOOLS_MOD" && CGO_ENABLED=0 go build -trimpath -o "$BIN/" ./cmd/k8s-testenv ./cmd/k8s-pause ./cmd/k8s-load ./cmd/k8s-otlp-sink)
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

  say "PKI and static identities"
  k8s-testenv pki "$DIR/pki" "https://$NODE_IP:6443" -ip "$NODE_IP" -ip "$API_SVC_IP" \
    -user "system:node:$NODE_NAME=system:nodes" -user system:kube-controller-manager \
    -user system:kube-scheduler -user system:kube-proxy -user system:coredns -user system:metrics-server \
    -user system:kube-router
  # The host's kubeconfig goes through the loopback forward.
  sed "s#https://$NODE_IP:6443#https://127.0.0.1:$API_PORT#" "$DIR/pki/kubeconfig" >"$DIR/kubeconfig"
  chmod 600 "$DIR/kubeconfig"

  say "etcd"
  start etcd etcd --name node --data-dir "$DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster node=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381
  wait_for etcd 30 in_ns bash -c 'exec 3<>/dev/tcp/127.0.0.1/2379'

  say "kube-apiserver"
  start kube-apiserver kube-apiserver \
    --bind-address=0.0.0.0 --advertise-address="$NODE_IP" --secure-port=6443 \
    --etcd-servers=http://127.0.0.1:2379 \
    --tls-cert-file="$DIR/pki/serving.crt" --tls-private-key-file="$DIR/pki/serving.key" \
    --client-ca-file="$DIR/pki/ca.crt" --token-auth-file="$DIR/pki/tokens.csv" \
    --kubelet-client-certificate="$DIR/pki/kubelet-client.crt" --kubelet-client-key="$DIR/pki/kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$DIR/pki/sa.pub" --service-account-signing-key-file="$DIR/pki/sa.key" \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --authorization-mode=Node,RBAC --anonymous-auth=false \
    --enable-admission-plugins=NodeRestriction,PodSecurity \
    --service-cluster-ip-range="$SVC_CIDR" --cert-dir="$DIR/pki/apiserver" --profiling=false \
    --requestheader-client-ca-file="$DIR/pki/ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$DIR/pki/front-proxy.crt" --proxy-client-key-file="$DIR/pki/front-proxy.key" \
    --enable-aggregator-routing=true
  # The host's side of the forward: one socat per connection into the namespace.
  socat "TCP-LISTEN:$API_PORT,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:nsenter --net=/run/netns/$NS socat STDIO TCP\:$NODE_IP\:6443" >"$DIR/logs/api-forward.log" 2>&1 &
  echo "$! api-forward" >>"$DIR/pids"
  export KUBECONFIG=$DIR/kubeconfig
  wait_for kube-apiserver 120 kubectl get --raw=/readyz

  say "RBAC for CoreDNS; a default StorageClass with local volumes"
  kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
  - apiGroups: [""]
    resources: [endpoints, services, pods, namespaces]
    verbs: [list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:coredns"}]
---
# No provisioner: claims bind to the local PersistentVolumes below when a pod
# uses them, as on a cluster with statically provisioned disks.
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF
  # One volume a Redis of a scenario claims: the volumes are kept (Retain)
  # after their namespaces go, so every install that enables Redis
  # persistence uses one up (install, values, overlays, netpol, prometheus,
  # skaffold and a person's own installs).
  local i
  for i in $(seq 1 16); do
    mkdir -p "$DIR/local-pv/pv$i"
    kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-pv$i}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: local
  local: {path: $DIR/local-pv/pv$i}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$NODE_NAME]}]}]
EOF
  done

  say "kube-controller-manager, kube-scheduler"
  start kube-controller-manager kube-controller-manager \
    --kubeconfig="$DIR/pki/kubeconfig-system-kube-controller-manager" \
    --authentication-kubeconfig="$DIR/pki/kubeconfig-system-kube-controller-manager" \
    --authorization-kubeconfig="$DIR/pki/kubeconfig-system-kube-controller-manager" \
    --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file="$DIR/pki/sa.key" --root-ca-file="$DIR/pki/ca.crt" \
    --cluster-signing-cert-file="$DIR/pki/ca.crt" --cluster-signing-key-file="$DIR/pki/ca.key" \
    --service-cluster-ip-range="$SVC_CIDR" --allocate-node-cidrs=false \
    --controllers='*,-nodeipam,-cloud-node-lifecycle' --profiling=false
  start kube-scheduler kube-scheduler \
    --kubeconfig="$DIR/pki/kubeconfig-system-kube-scheduler" \
    --authentication-kubeconfig="$DIR/pki/kubeconfig-system-kube-scheduler" \
    --authorization-kubeconfig="$DIR/pki/kubeconfig-system-kube-scheduler" \
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
  cat >"$DIR/etc/certs.d/$REGISTRY/hosts.toml" <<EOF
server = "http://$REGISTRY"

[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
  echo "$REGISTRY" >"$DIR/registry-address"

  say "containerd (its own root, state and socket; pulls only from the node's registry)"
  cat >"$DIR/etc/containerd.toml" <<EOF
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$DIR/containerd/containerd.sock"
[ttrpc]
  address = "$DIR/containerd/containerd.ttrpc.sock"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "plantstore.test/pause:1"
  # Root here lacks CAP_SYS_RESOURCE: no process may lower its
  # oom_score_adj, and runc fails every sandbox that asks for -998.
  restrict_oom_score_adj = true
  # The pods' network namespaces under our state directory, not the host's
  # /run/netns: teardown unmounts everything below the directory, and a
  # cluster killed with its pods running leaves none behind.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$DIR/etc/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni/net.d"
EOF
  cat >"$DIR/cni/net.d/10-plantstore.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "plantstore",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$DIR/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
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
  cat >"$DIR/etc/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
containerRuntimeEndpoint: unix://$DIR/containerd/containerd.sock
clusterDNS: [$DNS_IP]
clusterDomain: cluster.local
resolvConf: $DIR/etc/resolv.conf
# Not the machine's /var/log/pods: a kubelet removes every pod log directory
# there that is not one of its pods, those of a cluster running beside it too.
podLogsDir: $DIR/pod-logs
failSwapOn: false
serializeImagePulls: false
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%, nodefs.inodesFree: 2%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  start kubelet kubelet --config="$DIR/etc/kubelet.yaml" \
    --kubeconfig="$DIR/pki/kubeconfig-system-node-$NODE_NAME" \
    --root-dir="$DIR/kubelet" --cert-dir="$DIR/kubelet/pki" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP"

  say "kube-proxy (iptables)"
  cat >"$DIR/etc/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clientConnection: {kubeconfig: $DIR/pki/kubeconfig-system-kube-proxy}
# No conntrack sysctls: nf_conntrack_max is global, not the namespace's.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  start kube-proxy kube-proxy --config="$DIR/etc/kube-proxy.yaml"

  say "CoreDNS on $DNS_IP"
  cat >"$DIR/etc/Corefile" <<EOF
cluster.local:53 {
  bind $DNS_IP
  errors
  health 127.0.0.1:8181
  ready 127.0.0.1:8182
  kubernetes cluster.local {
    kubeconfig $DIR/pki/kubeconfig-system-coredns validate
  }
  cache 5
  loop
}
.:53 {
  bind $DNS_IP
  errors
  template ANY ANY {
    rcode NXDOMAIN
  }
}
EOF
  start coredns coredns -conf "$DIR/etc/Corefile"

  say "metrics-server on $NODE_IP:4443 (resource metrics for HPAs, kubectl top)"
  kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:metrics-server"}
rules:
  - apiGroups: [""]
    resources: [nodes/metrics]
    verbs: [get]
  - apiGroups: [""]
    resources: [pods, nodes]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:metrics-server"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:metrics-server"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "metrics-server:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: "metrics-server-auth-reader", namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
# metrics-server runs on the node, not in a pod: a Service without a
# selector whose endpoint is the node's address. Endpoints, not an
# EndpointSlice: the aggregator resolves APIServices through Endpoints.
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  ports: [{name: https, port: 443, targetPort: 4443}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: metrics-server, namespace: kube-system}
subsets: [{addresses: [{ip: "$NODE_IP"}], ports: [{name: https, port: 4443}]}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  service: {name: metrics-server, namespace: kube-system, port: 443}
  group: metrics.k8s.io
  version: v1beta1
  # Its serving certificate is self-signed, as in metrics-server's own manifest.
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
  start metrics-server metrics-server --kubeconfig="$DIR/pki/kubeconfig-system-metrics-server" \
    --authentication-kubeconfig="$DIR/pki/kubeconfig-system-metrics-server" \
    --authorization-kubeconfig="$DIR/pki/kubeconfig-system-metrics-server" \
    --bind-address="$NODE_IP" --secure-port=4443 --cert-dir="$DIR/metrics-server" \
    --kubelet-preferred-address-types=InternalIP --kubelet-insecure-tls --metric-resolution=15s

  wait_for "node $NODE_NAME Ready" 120 kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
  # NetworkPolicy: kube-router's network policy controller alone (no BGP
  # routing, no service proxy: the bridge and kube-proxy stay as they are),
  # iptables and ipset rules in the namespace. It reads its node's address
  # from the Node object, so it starts once the kubelet has registered it;
  # ready once it answers its health check and has hooked its chains into
  # the filter table.
  kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:kube-router"}
rules:
  - apiGroups: [""]
    resources: [namespaces, pods, services, nodes, endpoints]
    verbs: [get, list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [networkpolicies]
    verbs: [list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:kube-router"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:kube-router"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kube-router"}]
EOF
  say "kube-router: the NetworkPolicy controller only (iptables + ipset)"
  start kube-router kube-router --kubeconfig="$DIR/pki/kubeconfig-system-kube-router" \
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
  for s in /sys/fs/cgroup/*"$CGROUP_ROOT"; do
    [[ -d $s ]] || continue
    find "$s" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done
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
