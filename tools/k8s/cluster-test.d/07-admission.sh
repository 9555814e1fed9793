# shellcheck shell=bash
# Admission: only signed release images run. sigstore's policy-controller
# (its webhook, built from github.com/sigstore/policy-controller in
# tools/k8s/client-go-0.32) is installed from the module's own config/
# (CRDs, namespace, RBAC, configuration, webhook configurations) and runs on
# the node as a host process in the cluster's network namespace, under its
# own ServiceAccount (a token from the TokenRequest API), behind a Service
# without selector whose endpoint is the node's address, as metrics-server
# does; it makes its own serving certificate and fills in the webhook
# configurations itself. A ClusterImagePolicy requires a cosign signature by
# the release key (05-release.sh's $CLUSTER_DIR/release/cosign.pub) on every
# image of the node's registry; in a namespace that opts in
# (policy.sigstore.dev/include=true) a pod of the released image is admitted
# (and, named by tag, pinned to the signed digest by the webhook), and a pod
# of an unsigned image in the same registry (the released amd64 image with
# one annotation more, so another digest, pushed with crane) is refused
# with policy-controller's message. No TUF, no Rekor: the policy's key
# authority has no transparency log (the release is signed with
# --tlog-upload=false) and TUF is disabled (no network here). The registry
# is plain HTTP on loopback, which go-containerregistry (and so
# policy-controller) reaches over HTTP by itself: no flag is needed.
# Runs after 05-release.sh (RELEASED_DIGEST, RELEASE_REGISTRY, the key);
# with CLUSTER_REUSE on a cluster that ran it, reads them from the release
# directory.

stage "admission: sigstore policy-controller enforces the release signature"
ADM_T0=$SECONDS
ADM_NS=admission
ADM_SYSNS=cosign-system
ADM_DIR=$CLUSTER_DIR/policy-controller
ADM_RELDIR=$CLUSTER_DIR/release
ADM_VERSION=$(cat "$REPO/VERSION")
ADM_REGISTRY=${RELEASE_REGISTRY:-$(cat "$CLUSTER_DIR/registry-address")/plantstore}
# The node's address as its own components see it.
ADM_NODE_IP=${NODE_API#https://} ADM_NODE_IP=${ADM_NODE_IP%:*}
ADM_DIGEST=
[[ $(declare -p RELEASED_DIGEST 2>/dev/null) != 'declare -A'* ]] || ADM_DIGEST=${RELEASED_DIGEST[$ADM_VERSION]:-}
[[ -n $ADM_DIGEST || ! -f $ADM_RELDIR/$ADM_VERSION/release.json ]] || ADM_DIGEST=$(jq -r .image.digest "$ADM_RELDIR/$ADM_VERSION/release.json")

adm_run() {
  local mod=$TOOLS_MOD/client-go-0.32 pc_version config bin t i
  if [[ -z $ADM_DIGEST || ! -f $ADM_RELDIR/cosign.pub ]]; then
    fail "admission: no release of $ADM_VERSION in $ADM_RELDIR (05-release.sh runs first)"; return
  fi
  pc_version=$(mod_version "$mod" github.com/sigstore/policy-controller)
  config=$(mod_dir "$mod" "github.com/sigstore/policy-controller@$pc_version")/config
  [[ -d $config ]] || { fail "admission: policy-controller's config directory ($config) not downloaded"; return; }
  t=$SECONDS
  bin=$(node_tools "$CLUSTER_DIR/logs/policy-controller-build.log" policy-controller)/policy-controller
  [[ -x $bin ]] || { fail "admission: building policy-controller"; tail -n 20 "$CLUSTER_DIR/logs/policy-controller-build.log"; return; }
  echo "policy-controller $pc_version: $bin (built or found in $((SECONDS - t))s)"

  # A run on a reused cluster: the webhook of an earlier run goes first.
  node_stop policy-controller
  kubectl delete namespace "$ADM_NS" --ignore-not-found --timeout=120s >/dev/null

  # The module's own installation, less the Deployment (pods cannot pull its
  # image here) and the Service (a selector for that Deployment's pods).
  local f
  for f in "$config"/*.yaml; do
    case $(basename "$f") in webhook.yaml | 400-webhook-service.yaml | kustomization.yaml) continue ;; esac
    kubectl apply -f "$f" >/dev/null || { fail "admission: kubectl apply $(basename "$f")"; return; }
  done
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: webhook, namespace: $ADM_SYSNS}
spec:
  ports: [{name: https, port: 443, targetPort: 8443}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: webhook, namespace: $ADM_SYSNS}
subsets: [{addresses: [{ip: "$ADM_NODE_IP"}], ports: [{name: https, port: 8443}]}]
EOF

  # Its identity: the ServiceAccount and RBAC of its config/.
  mkdir -p "$ADM_DIR"
  node_kubeconfig "$ADM_DIR/kubeconfig" webhook "$ADM_SYSNS" webhook

  # On the node, with the environment of the module's config/webhook.yaml.
  # TUF is off (no network; the policy's authority is a key). The
  # kubeconfig goes by KUBECONFIG: its main parses the command line before
  # knative registers --kubeconfig, so that flag would be refused.
  t=$SECONDS
  node_start policy-controller "$CLUSTER_DIR/logs/policy-controller.log" \
    KUBECONFIG="$ADM_DIR/kubeconfig" SYSTEM_NAMESPACE="$ADM_SYSNS" CONFIG_LOGGING_NAME=config-logging \
    METRICS_DOMAIN=sigstore.dev/policy WEBHOOK_NAME=webhook KUBERNETES_MIN_VERSION=1.21.0 HOME="$ADM_DIR" \
    "$bin" --disable-tuf
  local pid=$NODE_PID
  # Ready when it answers the kubelet's probe (as in its Deployment), has
  # put its CA and rules into the webhook configurations, and the API server
  # reaches it: the ClusterImagePolicy below is itself validated by it
  # (failurePolicy Fail), so its creation proves the path.
  local pem policy_ok=0
  pem=$(sed 's/^/          /' "$ADM_RELDIR/cosign.pub")
  for ((i = 0; i < 240; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    if [[ $(nsenter --net="/run/netns/$NETNS" curl -sk -o /dev/null -w '%{http_code}' -H 'K-Kubelet-Probe: webhook' "https://$ADM_NODE_IP:8443/") == 200 ]] &&
      [[ -n $(kubectl get validatingwebhookconfiguration policy.sigstore.dev -o jsonpath='{.webhooks[0].clientConfig.caBundle}' 2>/dev/null) ]] &&
      kubectl apply -f - >"$ADM_DIR/policy.out" 2>&1 <<EOF
apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata: {name: plantstore-release}
spec:
  images: [{glob: "$(cut -d/ -f1 <<<"$ADM_REGISTRY")/**"}]
  authorities:
    - name: release-key
      key:
        hashAlgorithm: sha256
        data: |
$pem
EOF
    then
      policy_ok=1
      break
    fi
    sleep 0.5
  done
  if ((!policy_ok)); then
    fail "admission: policy-controller not ready or the ClusterImagePolicy refused after $((SECONDS - t))s: $(tail -n 3 "$ADM_DIR/policy.out" 2>/dev/null | tr '\n' ' ')"
    grep -E '"level":"(error|fatal|panic)"|panic:' "$CLUSTER_DIR/logs/policy-controller.log" | tail -n 5
    return
  fi
  # The policy reaches the admission side through the ConfigMap its
  # reconciler compiles.
  for ((i = 0; i < 120; i++)); do
    [[ $(kubectl get configmap -n "$ADM_SYSNS" config-image-policies -o jsonpath='{.data}' 2>/dev/null) != *plantstore-release* ]] || break
    sleep 0.5
  done
  local ready=$((SECONDS - t))
  if [[ $(kubectl get configmap -n "$ADM_SYSNS" config-image-policies -o jsonpath='{.data}') == *plantstore-release* ]]; then
    pass "admission: policy-controller $pc_version up on the node in ${ready}s (its certificate and webhook configurations made by itself; ClusterImagePolicy plantstore-release accepted through it and compiled)"
  else
    fail "admission: the ClusterImagePolicy never reached config-image-policies"; return
  fi

  restricted_ns "$ADM_NS"
  kubectl label namespace "$ADM_NS" policy.sigstore.dev/include=true >/dev/null

  # adm_pod NAME IMAGE: create a pod of IMAGE; its output (and exit code) is kubectl's.
  adm_pod() {
    kubectl apply -n "$ADM_NS" -f - 2>&1 <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
    - name: api
      image: $2
      imagePullPolicy: IfNotPresent
      $SECURE
EOF
  }
  local signed=$ADM_REGISTRY/plantstore@$ADM_DIGEST out signed_ok=0 unsigned_ok=0 tag_ok=0
  if out=$(adm_pod signed "$signed"); then
    signed_ok=1
    pass "admission: a pod of the signed release image $signed admitted"
    if kubectl wait -n "$ADM_NS" pod/signed --for=jsonpath='{.status.containerStatuses[0].imageID}'="$signed" --timeout=90s >/dev/null 2>&1; then
      pass "admission: the kubelet pulled and started it ($(kubectl get pod -n "$ADM_NS" signed -o jsonpath='{.status.containerStatuses[0].imageID}'))"
    else
      fail "admission: the admitted pod's image never ran: $(kubectl get pod -n "$ADM_NS" signed -o jsonpath='{.status.containerStatuses[0]}')"
    fi
  else
    fail "admission: the signed release image refused: $out"
  fi
  # By tag: policy-controller's mutating webhook pins it to the digest it verified.
  if out=$(adm_pod by-tag "$ADM_REGISTRY/plantstore:$ADM_VERSION") &&
    [[ $(kubectl get pod -n "$ADM_NS" by-tag -o jsonpath='{.spec.containers[0].image}') == "$ADM_REGISTRY/plantstore:$ADM_VERSION@$ADM_DIGEST" ]]; then
    tag_ok=1
    pass "admission: a pod naming the release by tag ($ADM_VERSION) admitted, its image pinned by the webhook to the digest it verified ($ADM_REGISTRY/plantstore:$ADM_VERSION@$ADM_DIGEST)"
  else
    fail "admission: by tag: $out; the pod's image: $(kubectl get pod -n "$ADM_NS" by-tag -o jsonpath='{.spec.containers[0].image}' 2>/dev/null), want $ADM_REGISTRY/plantstore:$ADM_VERSION@$ADM_DIGEST"
  fi

  # The unsigned image: the released linux/amd64 image with one annotation
  # more (another digest, never signed), in the same registry.
  local crane=("$REPO/bin/tools/crane" --insecure) amd64 unsigned
  amd64=$("${crane[@]}" manifest "$signed" | jq -r '.manifests[] | select(.platform.architecture == "amd64") | .digest')
  unsigned=$("${crane[@]}" mutate "$ADM_REGISTRY/plantstore@$amd64" --annotation org.plantstore.test=unsigned \
    -t "$ADM_REGISTRY/unsigned:$ADM_VERSION" 2>"$ADM_DIR/mutate.log") || { fail "admission: crane mutate: $(tail -n 2 "$ADM_DIR/mutate.log")"; return; }
  unsigned=$ADM_REGISTRY/unsigned@${unsigned##*@}
  if out=$(adm_pod unsigned "$unsigned"); then
    fail "admission: a pod of the unsigned image $unsigned admitted: $out"
  elif [[ $out == *'admission webhook "policy.sigstore.dev" denied the request'* ]]; then
    unsigned_ok=1
    pass "admission: a pod of the unsigned image $unsigned refused: $(tr '\n' ' ' <<<"$out" | sed 's/  */ /g')"
  else
    fail "admission: the unsigned image failed otherwise than by policy: $out"
  fi
  if kubectl get pod -n "$ADM_NS" unsigned >/dev/null 2>&1; then fail "admission: the unsigned pod exists"; fi

  figures "admission controller=policy-controller-$pc_version ready_seconds=$ready signed_admitted=$signed_ok tag_pinned=$tag_ok unsigned_refused=$unsigned_ok seconds=$((SECONDS - ADM_T0))"
  kubectl delete namespace "$ADM_NS" --wait=false >/dev/null
}
adm_run
