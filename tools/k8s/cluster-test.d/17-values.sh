# shellcheck shell=bash
# runs beside the next scenario (two Helm installs in namespaces of their
# own, no load: see beside in cluster-test.sh).
# The chart's other value sets install and become Ready; 37-hpa.sh then
# scales ci/full-values.yaml's HPA under load.

stage "values-dev.yaml and ci/full-values.yaml"
# full-values.yaml runs the Redis exporter beside Redis.
"$CLUSTER" images exporter
# full-values.yaml creates a ServiceMonitor and a PrometheusRule: their CRDs
# come from the prometheus-operator module, as validate.sh's do.
"$TOOLS_MOD/crds.sh" "$CLUSTER_DIR/crds" >"$CLUSTER_DIR/logs/crds.log" 2>&1 || true
if compgen -G "$CLUSTER_DIR/crds/*.yaml" >/dev/null; then
  kubectl create -f "$CLUSTER_DIR/crds/" >/dev/null && kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
fi
# Both installs at once: each waits mostly on its pods' readiness.
# values-dev.yaml installs under a release name of 53 characters, the longest
# Helm accepts: the chart's names keep their suffixes and stay within their
# kinds' limits (the Redis StatefulSet's 52, whose pods' revision label adds
# 11). 37-hpa.sh uses full-values.yaml's release by its usual name.
declare -A values_pid values_rel=([values-dev.yaml]=checkout-platform-production-eu-west-1-blue-green-012 [ci/full-values.yaml]=$REL)
for v in values-dev.yaml ci/full-values.yaml; do
  ns=vs-$(basename "$v" .yaml)
  restricted_ns "$ns"
  (
    t=$SECONDS
    helm install "${values_rel[$v]}" "$CHART" -n "$ns" -f "$CHART/$v" "${APP_IMAGE[@]}" --wait --timeout 240s >"$CLUSTER_DIR/logs/install-$ns.log" 2>&1
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
    pass "helm install -f $v as ${values_rel[$v]} (${#values_rel[$v]} characters): Ready in ${t}s ($pods)"
    figures "values-$(basename "$v" .yaml) release_name_length=${#values_rel[$v]} ready_seconds=$t pods=[${pods% }]"
  else
    fail "helm install -f $v"; tail -n 20 "$CLUSTER_DIR/logs/install-$ns.log"; kubectl get pods -n "$ns" -o wide
  fi
done

