# shellcheck shell=bash
# The chart's other value sets install and become Ready.
# Sourced by tools/k8s/cluster-test.sh, whose helpers it uses (see there).

stage "values-dev.yaml and ci/full-values.yaml"
# full-values.yaml creates a ServiceMonitor and a PrometheusRule: their CRDs
# come from the prometheus-operator module, as validate.sh makes them.
(cd "$TOOLS_MOD" && go run ./cmd/k8s-schemas -out "$CLUSTER_DIR/schemas" -moddir "$TOOLS_MOD" -kubernetes-version 1.31.0) >"$CLUSTER_DIR/logs/schemas.log" 2>&1 || true
if compgen -G "$CLUSTER_DIR/schemas/crds/*.yaml" >/dev/null; then
  kubectl create -f "$CLUSTER_DIR/schemas/crds/" >/dev/null && kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
fi
for v in values-dev.yaml ci/full-values.yaml; do
  ns=vs-$(basename "$v" .yaml)
  restricted_ns "$ns"
  t=$SECONDS
  if helm install "$REL" "$CHART" -n "$ns" -f "$CHART/$v" --set image.repository="$IMAGE_REPO" --set-string image.tag="$TAG" \
    "${LOCAL_IMAGES[@]}" --wait --timeout 240s >"$CLUSTER_DIR/logs/install-$ns.log" 2>&1; then
    pods=$(kubectl get pods -n "$ns" --no-headers | awk '{print $1"="$2}' | tr '\n' ' ')
    pass "helm install -f $v: Ready in $((SECONDS - t))s ($pods)"
    figures "values-$(basename "$v" .yaml) ready_seconds=$((SECONDS - t)) pods=[${pods% }]"
  else
    fail "helm install -f $v"; tail -n 20 "$CLUSTER_DIR/logs/install-$ns.log"; kubectl get pods -n "$ns" -o wide
  fi
done

