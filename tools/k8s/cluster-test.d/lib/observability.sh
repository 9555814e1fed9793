# shellcheck shell=bash
# Namespace observability as a user runs it beside plantstore, for the
# scenarios that trace (35-prometheus.sh, 65-tracing.sh; whichever runs
# first brings it up, and it goes after the last scenario):
#
#   jaeger               Jaeger v2 (tools/k8s/jaeger: its config.yaml, the
#                        binary of its module), traces in memory; OTLP on
#                        4317, the query API on 16686
#   otel-collector       the OpenTelemetry Collector (tools/k8s/client-go-0.36/otelcol) with
#                        the chart's charts/plantstore/files/otel-collector.yaml,
#                        at the address the chart's README names
#                        (otel.endpoint=http://otel-collector.observability:4318)
#   otel-collector-tail  the same with the tail-sampling recipe merged in
#                        (files/otel-collector-tail-sampling.yaml)
#   webhook-receiver     a webhook subscriber that answers 204
#                        (cmd/k8s-webhook-receiver)
#
# Sets JAEGER, the query API through a port-forward from the host. Sourced
# by the scenarios, whose harness (tools/k8s/cluster-test.sh) it uses.

OBS_NS=observability
OBS_UP=${OBS_UP:-0}
JAEGER=${JAEGER:-}

# collector_manifest NAME CONFIG...: Deployment and Service NAME running the
# Collector with the given files of ConfigMap otel-collector-config, merged
# in order.
collector_manifest() {
  local name=$1 args='' f; shift
  for f in "$@"; do args+="\"--config=/conf/$f\", "; done
  app_manifest "$name" otelcol otelcol:1 "otlp-grpc=4317 otlp-http=4318" "serviceAccountName: otel-collector" \
    "volumes: [{name: conf, configMap: {name: otel-collector-config}}]" <<EOF
args: [${args%, }]
readinessProbe: {httpGet: {path: /, port: 13133}, periodSeconds: 2}
# memory_limiter's percentages are of this limit.
resources: {requests: {cpu: 10m, memory: 64Mi}, limits: {memory: 512Mi}}
volumeMounts: [{name: conf, mountPath: /conf, readOnly: true}]
EOF
}

observability_up() {
  ((OBS_UP)) && return 0
  "$CLUSTER" images tracing
  local t=$SECONDS
  restricted_ns "$OBS_NS"
  kubectl create configmap -n "$OBS_NS" otel-collector-config \
    --from-file="$CHART/files/otel-collector.yaml" --from-file="$CHART/files/otel-collector-tail-sampling.yaml" >/dev/null
  kubectl create configmap -n "$OBS_NS" jaeger-config --from-file=config.yaml="$TOOLS_MOD/jaeger/config.yaml" >/dev/null
  {
    # What k8sattributes reads (its documented RBAC).
    cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: otel-collector, namespace: $OBS_NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: otel-collector}
rules:
  - {apiGroups: [""], resources: [pods, namespaces], verbs: [get, list, watch]}
  - {apiGroups: [apps], resources: [replicasets], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: otel-collector}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: otel-collector}
subjects: [{kind: ServiceAccount, name: otel-collector, namespace: $OBS_NS}]
---
EOF
    app_manifest jaeger jaeger jaeger:1 "otlp-grpc=4317 query-http=16686" "automountServiceAccountToken: false" \
      "volumes: [{name: conf, configMap: {name: jaeger-config}}]" <<'EOF'
args: [--config=/conf/config.yaml]
readinessProbe: {httpGet: {path: /status, port: 13133}, periodSeconds: 2}
resources: {requests: {cpu: 10m, memory: 64Mi}, limits: {memory: 1Gi}}
volumeMounts: [{name: conf, mountPath: /conf, readOnly: true}]
EOF
    receiver_manifest
    collector_manifest otel-collector otel-collector.yaml
    collector_manifest otel-collector-tail otel-collector.yaml otel-collector-tail-sampling.yaml
  } | kubectl apply -n "$OBS_NS" -f - >"$CLUSTER_DIR/logs/observability-apply.log" 2>&1 ||
    { fail "applying namespace $OBS_NS"; tail -n 5 "$CLUSTER_DIR/logs/observability-apply.log"; return 1; }
  local d ok=1
  for d in jaeger otel-collector otel-collector-tail webhook-receiver; do
    kubectl rollout status -n "$OBS_NS" "deployment/$d" --timeout=120s >/dev/null ||
      { ok=0; fail "$OBS_NS/$d not Ready"; kubectl logs -n "$OBS_NS" "deployment/$d" --tail=20 || true; }
  done
  ((ok)) && pass "Jaeger, the Collector (plain and tail-sampling) and a webhook receiver Ready in $OBS_NS in $((SECONDS - t))s"
  port_forward "$OBS_NS" svc/jaeger 16686 jaeger
  OBS_PF_PID=$PF_PID JAEGER=$PF_URL
  OBS_UP=1
  later observability_down
}

# observability_down [wait]: remove it; with wait, until the namespace is
# gone, so that the next observability_up starts afresh (a scenario that
# drains or kills nodes after its traces would take the one in-memory
# Jaeger, and the port-forward to it, with them).
observability_down() {
  local wait=false
  [[ -z ${1:-} ]] || wait=true
  kill "${OBS_PF_PID:-}" 2>/dev/null || true
  kubectl delete namespace "$OBS_NS" --wait="$wait" --timeout=120s >/dev/null 2>&1 || true
  kubectl delete clusterrole,clusterrolebinding otel-collector --ignore-not-found >/dev/null
  OBS_UP=0
}

# jaeger_trace ID: the trace as Jaeger's API v3 returns it (OTLP JSON under
# .result), {} when Jaeger has none.
jaeger_trace() { curl -fs "$JAEGER/api/v3/traces/$1" || echo '{}'; }

# jaeger_missing ID...: the trace ids Jaeger does not have, one a line (one
# curl, eight lookups at a time through the port-forward: an outage leaves
# thousands to look up). Only a 404 is missing: a lookup that failed on the way (the
# port-forward, a timeout, a 5xx, no answer at all) is asked again, up to
# three times, each retry a line in the log jaeger_retries counts; after
# that it is reported missing too.
jaeger_retries_log() { echo "$CLUSTER_DIR/logs/jaeger-lookup-retries.log"; }
jaeger_missing() {
  local ids=("$@") try code url id retry
  local -A answered
  for try in 1 2 3; do
    ((${#ids[@]})) || return 0
    answered=() retry=()
    while read -r code url; do
      answered[${url##*/}]=$code
    done < <(printf 'url = "%s"\noutput = "/dev/null"\n' "${ids[@]/#/$JAEGER/api/v3/traces/}" |
      curl -s -Z --parallel-max 8 --max-time 10 -w '%{http_code} %{url_effective}\n' -K - 2>/dev/null || true)
    for id in "${ids[@]}"; do
      case ${answered[$id]:-none} in
        200) ;;
        404) echo "$id" ;;
        *) retry+=("$id") ;;
      esac
    done
    ((${#retry[@]})) || return 0
    if ((try < 3)); then
      for id in "${retry[@]}"; do echo "$id ${answered[$id]:-none}"; done >>"$(jaeger_retries_log)"
    else
      printf '%s\n' "${retry[@]}"
    fi
    ids=("${retry[@]}")
  done
}

# jaeger_retries: how many lookups were asked again so far.
jaeger_retries() { { cat "$(jaeger_retries_log)" 2>/dev/null || true; } | grep -c . || true; }

# jaeger_found ID...: how many of the trace ids Jaeger has.
jaeger_found() {
  (($#)) || { echo 0; return; }
  echo $(($# - $(jaeger_missing "$@" | grep -c . || true)))
}
