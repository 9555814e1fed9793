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
# Both installs at once: each waits mostly on its pods' readiness.
declare -A values_pid
for v in values-dev.yaml ci/full-values.yaml; do
  ns=vs-$(basename "$v" .yaml)
  restricted_ns "$ns"
  (
    t=$SECONDS
    helm install "$REL" "$CHART" -n "$ns" -f "$CHART/$v" --set image.repository="$IMAGE_REPO" --set-string image.tag="$TAG" \
      "${LOCAL_IMAGES[@]}" --wait --timeout 240s >"$CLUSTER_DIR/logs/install-$ns.log" 2>&1
    rc=$?
    echo $((SECONDS - t)) >"$CLUSTER_DIR/logs/install-$ns.seconds"
    exit $rc
  ) &
  values_pid[$v]=$!
done
for v in values-dev.yaml ci/full-values.yaml; do
  ns=vs-$(basename "$v" .yaml)
  if wait "${values_pid[$v]}"; then
    t=$(cat "$CLUSTER_DIR/logs/install-$ns.seconds")
    pods=$(kubectl get pods -n "$ns" --no-headers | awk '{print $1"="$2}' | tr '\n' ' ')
    pass "helm install -f $v: Ready in ${t}s ($pods)"
    figures "values-$(basename "$v" .yaml) ready_seconds=$t pods=[${pods% }]"
  else
    fail "helm install -f $v"; tail -n 20 "$CLUSTER_DIR/logs/install-$ns.log"; kubectl get pods -n "$ns" -o wide
  fi
done

stage "the HPA of ci/full-values.yaml on resource metrics (metrics-server on the node)"
ns=vs-full-values
hpa_util() { kubectl get hpa -n "$ns" "$REL" -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}' 2>/dev/null; }
t=$SECONDS
until [[ -n $(hpa_util) ]] || ((SECONDS - t > 120)); do sleep 2; done
util_idle=$(hpa_util) metrics_wait=$((SECONDS - t))
replicas_before=$(kubectl get deployment -n "$ns" "$REL" -o jsonpath='{.status.readyReplicas}')
if [[ -z $util_idle ]]; then
  fail "HPA has no CPU metric after 120s: $(kubectl describe hpa -n "$ns" "$REL" | grep -iE 'warning|unable' | head -n 3 | tr '\n' ' ')"
else
  # Load until the HPA asks for more pods than its minimum, or 120 s. The
  # values' NetworkPolicy (enforced: kube-router) admits the API port only
  # from the ingress-nginx namespace: the load comes from there, as an
  # ingress controller's requests would. Twice the scenarios' rate: at
  # their rate three pods sat too close to the HPA's CPU target to scale
  # every time.
  restricted_ns ingress-nginx
  kubectl get secret -n "$ns" "$REL-tokens" -o json |
    jq '{apiVersion, kind, type, data, metadata: {name: .metadata.name}}' | kubectl apply -n ingress-nginx -f - >/dev/null
  RATE=$((RATE * 2)) load_start ingress-nginx load-hpa 120 "http://$REL.$ns.svc:8080"
  t=$SECONDS util_max=$util_idle desired=$replicas_before
  while ((SECONDS - t < 115)); do
    u=$(hpa_util); [[ -n $u ]] && ((u > util_max)) && util_max=$u
    desired=$(kubectl get hpa -n "$ns" "$REL" -o jsonpath='{.status.desiredReplicas}')
    ((desired > replicas_before)) && break
    sleep 3
  done
  scaled_after=$((SECONDS - t))
  kubectl delete pod -n ingress-nginx load-hpa --wait=false >/dev/null
  figures "hpa metrics_after_s=$metrics_wait cpu_idle_pct=$util_idle cpu_max_pct=$util_max replicas=$replicas_before desired=$desired scaled_after_s=$scaled_after"
  if ((desired > replicas_before)); then
    pass "HPA on metrics-server's CPU metric: idle ${util_idle}%, ${util_max}% under load, scaled $replicas_before -> $desired in ${scaled_after}s"
  else
    fail "HPA did not scale under load (CPU ${util_max}% of request, target 70%)"
  fi
fi
