# shellcheck shell=bash
# skaffold (built from tools/k8s/skaffold) on this cluster through the
# profile test-cluster: no Docker daemon, no registry. `skaffold dev` builds
# and deploys the chart (its first deploy is what `skaffold run` does: the
# same build, import and helm install), then sees a source change and the
# new pod serves it.
# The inner loop is measured from the moment a source file is saved to the
# first answer of the new code (the dev session's first rebuild: later ones
# take the same, docs/validation.md), on a copy of the repository that the
# scenario edits.
# Sourced by tools/k8s/cluster-test.sh, whose helpers it uses (see there).

stage "skaffold dev (profile test-cluster: buildah, import into the node)"
SK_NS=skaffold
restricted_ns "$SK_NS"
src=$CLUSTER_DIR/skaffold-src
rm -rf "$src"
git clone -q --no-hardlinks "$REPO" "$src"
# The working tree's uncommitted changes too: what a developer runs is what they see.
(cd "$REPO" && git ls-files -m -o --exclude-standard -z | xargs -0 -r cp --parents -t "$src")
SKAFFOLD=("$src/tools/k8s/skaffold.sh")
"${SKAFFOLD[@]}" version >/dev/null 2>"$CLUSTER_DIR/logs/skaffold-build.log" ||
  { fail "skaffold: build"; tail -n 20 "$CLUSTER_DIR/logs/skaffold-build.log"; }

# A pod to ask the API from; the service answers 404 with a message for an unknown path.
kubectl apply -n "$SK_NS" -f - >/dev/null <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: asker}
spec:
  automountServiceAccountToken: false
  containers:
    - name: client
      image: plantstore.test/client:1
      imagePullPolicy: Never
      command: [sleep, "3600"]
      $SECURE
EOF2
kubectl wait -n "$SK_NS" --for=condition=Ready pod/asker --timeout=60s >/dev/null
ask() { kubectl exec -n "$SK_NS" asker -- curl -s -m 2 http://plantstore:8080/no-such-path 2>/dev/null || true; }

# skaffold dev, then an edit, measured from the save to the new answer.
"${SKAFFOLD[@]}" dev -p test-cluster -n "$SK_NS" --cache-artifacts=false --port-forward=off >"$CLUSTER_DIR/logs/skaffold-dev.log" 2>&1 &
dev_pid=$!
t=$(ms)
for _ in $(seq 600); do grep -q 'Watching for changes' "$CLUSTER_DIR/logs/skaffold-dev.log" && break; sleep 0.5; done
dev_ms=$(($(ms) - t))
edits=()
if grep -q 'Watching for changes' "$CLUSTER_DIR/logs/skaffold-dev.log"; then
  if [[ $(ask) == *"no such path"* ]]; then
    pass "skaffold dev -p test-cluster: built, imported and deployed in $((dev_ms / 1000))s; the API answers"
  else
    fail "skaffold dev: the first deploy does not answer: $(ask)"
  fi
  for n in 1; do
    marker="edit $n of the skaffold scenario"
    saved=$(ms)
    sed -i "s|no such path[^\"]*: see /openapi.yaml|no such path ($marker): see /openapi.yaml|" "$src/internal/httpapi/router.go"
    served=''
    while (($(ms) - saved < 300000)); do
      if [[ $(ask) == *"$marker"* ]]; then served=$(ms); break; fi
      sleep 0.2
    done
    if [[ -n $served ]]; then
      edits+=($((served - saved)))
      pass "skaffold dev: edit $n saved -> new code answering in $(awk "BEGIN {printf \"%.1f\", $((served - saved)) / 1000}")s"
    else
      edits+=(-1)
      fail "skaffold dev: edit $n not served within 300s"; tail -n 20 "$CLUSTER_DIR/logs/skaffold-dev.log"
      break
    fi
  done
else
  fail "skaffold dev did not get to watching within 300s"; tail -n 30 "$CLUSTER_DIR/logs/skaffold-dev.log"
fi
kill -INT "$dev_pid" 2>/dev/null || true # skaffold dev cleans up (helm uninstall) on Ctrl-C
wait "$dev_pid" 2>/dev/null || true
figures "skaffold dev_first_deploy_ms=$dev_ms edit1_ms=${edits[0]:-}"
kubectl delete namespace "$SK_NS" --wait=false >/dev/null
rm -rf "$src"
