# shellcheck shell=bash
# runs beside the next scenario (namespaces of its own, no load: see beside
# in cluster-test.sh).
# Every kustomize overlay applied, Ready, and serving a create.

stage "kustomize overlays"
# Each overlay wrapped in a kustomization of the test's own that only swaps
# the image for the one the node has and, for prod, the tokens for a test
# token; prod's operator-run Redis is a Redis in namespace "redis".
TEST_TOKEN=cluster-test-$(hex 8)
kubectl create namespace redis >/dev/null
kubectl apply -n redis -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: redis-master, labels: {app: redis-master}}
spec:
  automountServiceAccountToken: false
  containers:
    - name: redis
      image: plantstore.test/redis:7.0
      imagePullPolicy: Never
      command: [redis-server, --requirepass, overlay-test-password, --save, "", --appendonly, "no", --protected-mode, "no"]
      securityContext: {runAsNonRoot: true, runAsUser: 999, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}
---
apiVersion: v1
kind: Service
metadata: {name: redis-master}
spec:
  selector: {app: redis-master}
  ports: [{port: 6379, targetPort: 6379}]
EOF
for o in "$REPO"/k8s/overlays/*/; do
  o=$(basename "$o")
  ns=ovl-$o
  restricted_ns "$ns"
  w=$CLUSTER_DIR/overlay-$o
  mkdir -p "$w"
  cp -r "$REPO/k8s" "$w/k8s"
  printf '%s\n' "$TEST_TOKEN" >"$w/tokens"
  {
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources: [k8s/overlays/$o]"
    echo "images: [{name: ghcr.io/plantstore/plantstore, newName: $IMAGE_REPO, newTag: \"$TAG\"}, {name: redis, newName: plantstore.test/redis, newTag: \"7.0\"}]"
    if [[ $o == prod ]]; then
      echo "secretGenerator: [{name: plantstore-tokens, behavior: replace, files: [tokens]}]"
    fi
  } >"$w/kustomization.yaml"
  [[ $o != prod ]] || kubectl create secret generic plantstore-redis -n "$ns" --from-literal=password=overlay-test-password >/dev/null
  t=$SECONDS
  if kubectl apply -k "$w" -n "$ns" >"$CLUSTER_DIR/logs/overlay-$o.log" 2>&1 &&
    kubectl rollout status -n "$ns" deployment/plantstore --timeout=180s >>"$CLUSTER_DIR/logs/overlay-$o.log" 2>&1; then
    # dev accepts the well-known development token its tokens file documents;
    # prod the test's token that replaced the placeholder digests.
    token=$TEST_TOKEN
    [[ $o != dev ]] || token=plantstore-dev-token-change-me
    out=$(client "$ns" create-$o '
token='"$token"'
code=$(curl -s -o /tmp/r -w "%{http_code}" --retry 5 --retry-connrefused -X POST http://plantstore:8080/plants -H "Authorization: Bearer $token" -H "Content-Type: application/json" -d "{\"id\": 42, \"name\": \"overlay\"}")
echo "create=$code $(cat /tmp/r)"' | tr '\n' ' ')
    pods=$(kubectl get pods -n "$ns" --no-headers | awk '{print $1"="$2}' | tr '\n' ' ')
    figures "overlay-$o ready_seconds=$((SECONDS - t)) $out pods=[${pods% }]"
    if grep -q 'create=200 {"name":"overlay"}' <<<"$out"; then pass "overlay $o: Ready in $((SECONDS - t))s, a create through its Service 200"
    else fail "overlay $o: create through its Service: $out"; fi
  else
    fail "overlay $o: not Ready"; tail -n 20 "$CLUSTER_DIR/logs/overlay-$o.log"; kubectl get pods -n "$ns" -o wide
  fi
done
# Gone once proven, as 10-chart.sh's namespace is.
mapfile -t ovl_ns < <(for o in "$REPO"/k8s/overlays/*/; do echo "ovl-$(basename "$o")"; done)
kubectl delete namespace redis "${ovl_ns[@]}" --wait=false >/dev/null
