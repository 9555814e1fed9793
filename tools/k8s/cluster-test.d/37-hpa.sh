# shellcheck shell=bash
# The HPA of ci/full-values.yaml, as 17-values.sh installed it, scales on
# metrics-server's resource metrics under load.

stage "the HPA of ci/full-values.yaml on resource metrics (metrics-server on the node)"
ns=vs-full-values
kubectl get deployment -n "$ns" "$REL" >/dev/null 2>&1 || fail "no release in $ns: 17-values.sh installs it (CLUSTER_SCENARIOS must take both)"
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
# 17-values.sh's releases, this scenario's last user, gone.
kubectl delete namespace vs-full-values vs-values-dev --ignore-not-found --wait=false >/dev/null
