# shellcheck shell=bash
# A real Prometheus, made by the Prometheus Operator, monitoring plantstore
# through the chart's own ServiceMonitor and PrometheusRule, as on a user's
# cluster: the operator (v0.85.0) and Prometheus (v3.5.0) are built from
# their Go modules (tools/k8s/client-go-0.33, tools/k8s/client-go-0.32) and
# run from images made FROM scratch (images.sh); the CRDs and the operator's
# RBAC and Deployment are the operator module's own example manifests. The
# service exports its sampled spans to the OpenTelemetry Collector in front
# of Jaeger (lib/observability.sh), at the address the chart's README names,
# so its exemplars carry the ids of traces a user can open.
#
# The chart's Redis exporter (redis.metrics, built from its module,
# tools/k8s/redis-exporter, under the chart's default image name) runs
# beside Redis, with a maxmemory; a replica pod is attached to the chart's
# Redis so that the dashboard's replication panels have data.
#
# Shown: the targets are up; native histograms are ingested beside the
# classic buckets; exemplars carry 32-hex trace ids of traces Jaeger has
# (metric -> trace; 65-tracing.sh repeats the figure); the Redis exporter's
# target is up with memory against maxmemory, an AOF rewrite the scenario
# starts and the replica's lag; every dashboard target and recording rule has data and every
# alerting rule evaluates (tools/monitoring/cmd/prom-check); the main panels
# drawn from the real data (tools/monitoring/cmd/dashboard-png); and
# PlantstoreStoreUnavailable goes pending -> firing within its `for` during a
# real Redis outage under load, and resolves after.
#
# For speed the scrape and evaluation intervals are 5 s (the Prometheus CR,
# and the chart's serviceMonitor.interval, which overrides the CR's); the
# rules are the chart's, unchanged, so the alert still waits its 2 minutes
# and resolves only when its 5-minute rate window no longer holds a 503.
#
# Environment: CLUSTER_DASHBOARD_PNG, where to write the panels' PNG
# (default in $TMPDIR; docs/dashboard-on-cluster.png is one such run).

# shellcheck source=/dev/null
source "$TOOLS_MOD/cluster-test.d/lib/observability.sh"
PROM_NS=monitoring
APP_NS=prom-app
PROM_VERSION=v3.5.0
OP_VERSION=$(mod_version "$TOOLS_MOD/client-go-0.33" github.com/prometheus-operator/prometheus-operator)
OP_DIR=$(mod_dir "$TOOLS_MOD/client-go-0.33" github.com/prometheus-operator/prometheus-operator)
PNG=${CLUSTER_DASHBOARD_PNG:-${TMPDIR:-/tmp}/plantstore-dashboard-on-cluster.png}
prom_t0=$SECONDS

stage "Prometheus Operator $OP_VERSION: CRDs, RBAC and Deployment from its module"
"$CLUSTER" images prometheus exporter
# Server-side: the CRDs are too large for the last-applied annotation, and
# 17-values.sh may have created two of them already.
kubectl apply --server-side --force-conflicts -f "$OP_DIR/example/prometheus-operator-crd/" >/dev/null
kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
restricted_ns "$PROM_NS"
# The examples live in namespace default, pulling from quay.io: our
# namespace and the images the node has.
for f in prometheus-operator/prometheus-operator-service-account.yaml prometheus-operator/prometheus-operator-cluster-role.yaml \
  prometheus-operator/prometheus-operator-cluster-role-binding.yaml prometheus-operator/prometheus-operator-deployment.yaml \
  prometheus/prometheus-service-account.yaml prometheus/prometheus-cluster-role.yaml prometheus/prometheus-cluster-role-binding.yaml; do
  sed -e "s#namespace: default#namespace: $PROM_NS#" \
    -e "s#quay.io/prometheus-operator/#plantstore.test/#g" "$OP_DIR/example/rbac/$f"
  echo ---
done | kubectl apply -n "$PROM_NS" -f - >"$CLUSTER_DIR/logs/prometheus-operator-apply.log" 2>&1 ||
  { fail "applying the operator's manifests"; tail -n 5 "$CLUSTER_DIR/logs/prometheus-operator-apply.log"; }
t=$SECONDS
if kubectl rollout status -n "$PROM_NS" deployment/prometheus-operator --timeout=120s >/dev/null; then
  pass "prometheus-operator $OP_VERSION Ready in $((SECONDS - t))s (its module's RBAC and Deployment, namespace enforcing restricted)"
else
  fail "prometheus-operator not Ready"; kubectl logs -n "$PROM_NS" deployment/prometheus-operator --tail=20 || true
fi

stage "Jaeger and the OpenTelemetry Collector ($OBS_NS), plantstore with ServiceMonitor, PrometheusRule and tracing to the Collector"
observability_up
restricted_ns "$APP_NS"
# The Redis row's maxmemory panels need a limit.
REDIS_MAXMEMORY=128mb REDIS_MAXMEMORY_BYTES=$((128 << 20))
# Two clients: the load's, unlimited (the first raw token, which k8s-load
# uses), and one held to 1 request a second, so that the dashboard's
# rate-limit panel has 429s to show.
load_token=$(hex 16) limited_token=$(hex 16)
# The webhook subscriber is a ClusterIP: allowed explicitly.
whsec=whsec_$(head -c 24 /dev/urandom | base64)
t=$SECONDS
# The labels a kube-prometheus-stack user sets (ci/full-values.yaml); the
# classic buckets kept beside the native histograms (the latency SLO reads
# them); tracing to the Collector as the README says, sampling the chart's
# default 10%.
if logged "install-$APP_NS" "helm install with serviceMonitor, prometheusRule and otel" \
  helm install "$REL" "$CHART" -n "$APP_NS" "${APP_IMAGE[@]}" --set serviceMonitor.enabled=true --set serviceMonitor.labels.release=kube-prometheus-stack \
  --set serviceMonitor.scrapeClassicHistograms=true --set serviceMonitor.interval=5s --set serviceMonitor.scrapeTimeout=4s \
  --set prometheusRule.enabled=true --set prometheusRule.labels.release=kube-prometheus-stack \
  --set redis.metrics.enabled=true --set-string redis.maxmemory=$REDIS_MAXMEMORY \
  --set-json 'networkPolicy.redis.extraIngress=[{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "scenario-redis-replica"}}}], "ports": [{"port": 6379}]}]' \
  --set otel.endpoint=http://otel-collector.observability:4318 \
  --set-string "auth.tokens[0]=$load_token name=load" --set-string "auth.tokens[1]=$limited_token name=limited rate=1/s burst=1" \
  --set-string "webhooks.subscribers[0]=http://webhook-receiver.$OBS_NS.svc:8080/hooks/plantstore $whsec" --set "webhooks.allowCIDRs={10.96.0.0/16}" \
  --wait --timeout 240s; then
  pass "plantstore (ServiceMonitor, PrometheusRule, OTLP to otel-collector.observability:4318) Ready in $((SECONDS - t))s"
fi
# A replica of the chart's Redis (the chart runs none), for the replication
# panels: the Redis image the node has; the password from the chart's
# Secret into a config file, never on a command line.
kubectl apply -n "$APP_NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: redis-replica, labels: {app.kubernetes.io/name: scenario-redis-replica}}
spec:
  automountServiceAccountToken: false
  containers:
    - name: replica
      image: plantstore.test/redis:7.0
      imagePullPolicy: Never
      command: [sh, -c, $(jq -Rs . <<<'printf "port 6379\ndir /data\nappendonly no\nreplicaof %s 6379\nmasterauth %s\n" "$MASTER" "$REDIS_PASSWORD" >/data/replica.conf && exec redis-server /data/replica.conf')]
      env:
        - {name: MASTER, value: $REL-redis}
        - {name: REDIS_PASSWORD, valueFrom: {secretKeyRef: {name: $REL-redis, key: redis-password}}}
      $SECURE
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {sizeLimit: 256Mi}}]
EOF

stage "Prometheus $PROM_VERSION from a Prometheus CR: the operator's StatefulSet"
sel="{matchLabels: {release: kube-prometheus-stack}}"
nssel="{matchLabels: {kubernetes.io/metadata.name: $APP_NS}}"
kubectl apply -n "$PROM_NS" -f - >/dev/null <<EOF
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: plantstore}
spec:
  image: plantstore.test/prometheus:$PROM_VERSION
  version: $PROM_VERSION
  imagePullPolicy: Never
  replicas: 1
  serviceAccountName: prometheus
  # Short, so that the scenario is quick; the chart's ServiceMonitor sets
  # its own (serviceMonitor.interval), which wins.
  scrapeInterval: 5s
  evaluationInterval: 5s
  # Native histograms (Prometheus 3.5: a feature flag) need the protobuf
  # exposition, which must come first among the protocols offered.
  enableFeatures: [native-histograms, exemplar-storage]
  scrapeProtocols: [PrometheusProto, OpenMetricsText1.0.0, OpenMetricsText0.0.1, PrometheusText0.0.4]
  exemplars: {maxSize: 100000}
  serviceMonitorSelector: $sel
  serviceMonitorNamespaceSelector: $nssel
  ruleSelector: $sel
  ruleNamespaceSelector: $nssel
  retention: 1h
  securityContext: {runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, fsGroup: 65534, seccompProfile: {type: RuntimeDefault}}
  resources: {requests: {cpu: 100m, memory: 256Mi}}
EOF
t=$SECONDS
until kubectl get statefulset -n "$PROM_NS" prometheus-plantstore >/dev/null 2>&1 || ((SECONDS - t > 60)); do sleep 1; done
if kubectl rollout status -n "$PROM_NS" statefulset/prometheus-plantstore --timeout=180s >/dev/null; then
  pass "the operator made StatefulSet prometheus-plantstore; Ready in $((SECONDS - t))s"
else
  fail "Prometheus StatefulSet not Ready"; kubectl get pods -n "$PROM_NS" -o wide; kubectl get events -n "$PROM_NS" | tail -n 10
fi
kubectl get pods -n "$PROM_NS" -o wide
# The API from the host: a port-forward of the operator's governing Service.
port_forward "$PROM_NS" svc/prometheus-operated 9090 prometheus
pf_pid=$PF_PID PROM=$PF_URL
# pq QUERY: an instant query's result (JSON).
pq() { { curl -fsS --get --data-urlencode "query=$1" "$PROM/api/v1/query" || echo '{}'; } | jq -c '.data.result // []'; }
# papi PATH: a GET of the API (JSON; {} when it fails).
papi() { curl -fsS "$PROM$1" || echo '{}'; }
# targets_up JOB N: wait until N active targets of JOB are up (60 s at
# most); prints how many are.
targets_up() {
  local t=$SECONDS n=0
  until ((SECONDS - t > 60)); do
    n=$(papi "/api/v1/targets?state=active" | jq --arg j "$1" '[.data.activeTargets[]? | select(.labels.job == $j and .health == "up")] | length')
    ((n == $2)) && break
    sleep 2
  done
  echo "$n"
}
prom_build_version=$(papi /api/v1/status/buildinfo | jq -r .data.version)
flags=$(papi /api/v1/status/flags | jq -r '.data["enable-feature"]')
echo "Prometheus $prom_build_version at $PROM (port-forward), --enable-feature=$flags"

stage "under load: targets up, native histograms, exemplars with trace ids"
load_t0=$(date +%s)
load_start "$APP_NS" load-prom 45
# Refused requests, for the dashboard's auth failure and rate-limit panels:
# no token, a wrong token, and a burst of the limited client's.
limited=$(client "$APP_NS" refused '
for i in 1 2 3 4 5; do
  curl -s -o /dev/null -X POST http://'"$REL"':8080/plants -H "Content-Type: application/json" -d "{\"id\": $i, \"name\": \"x\"}"
  curl -s -o /dev/null -X POST http://'"$REL"':8080/plants -H "Authorization: Bearer wrong" -H "Content-Type: application/json" -d "{\"id\": $i, \"name\": \"x\"}"
done
for i in 1 2 3 4 5 6 7 8 9 10; do
  curl -s -o /dev/null -w "%{http_code} " http://'"$REL"':8080/plants/$i -H "Authorization: Bearer '"$limited_token"'"
done')
echo "the limited client's burst: $limited"
api_pods=$(kubectl get pods -n "$APP_NS" -l app.kubernetes.io/component=api --no-headers | wc -l)
t=$SECONDS up=$(targets_up plantstore "$api_pods")
pools=$(papi "/api/v1/targets?state=active" | jq -r '[.data.activeTargets[]? | select(.labels.job == "plantstore") | .scrapePool] | unique | join(",")')
if ((up == api_pods && api_pods > 0)); then
  pass "targets up: $up of $api_pods API pods, job=\"plantstore\", scrape pool $pools (the chart's ServiceMonitor), after $((SECONDS - t))s"
else
  fail "targets up: $up of $api_pods"; papi /api/v1/targets | jq -c '.data.activeTargets[]? | {scrapePool, health, lastError}' | head -n 5
fi
sleep 20 # a few scrapes of the load

native=$(pq 'sum by (route) (histogram_count(rate(plantstore_http_request_duration_seconds{job="plantstore"}[1m])))')
classic=$(pq 'count(plantstore_http_request_duration_seconds_bucket{job="plantstore"})' | jq -r '.[0].value[1] // 0')
buckets=$(pq 'plantstore_http_request_duration_seconds{job="plantstore", method="POST", route="/plants", code="200"}' | jq '[.[].histogram[1].buckets | length] | max // 0')
native_rate=$(jq -r '[.[] | select(.metric.route == "/plants") | .value[1] | tonumber] | add // 0 | floor' <<<"$native")
echo "native histogram_count rate by route: $native"
if ((native_rate > 0 && classic > 0 && buckets > 0)); then
  pass "native histograms ingested: histogram_count(rate(plantstore_http_request_duration_seconds[1m])) = $native_rate/s on /plants, the POST /plants 200 series a native histogram of $buckets buckets; the classic _bucket series kept beside them ($classic)"
else
  fail "native histograms: rate $native_rate, native buckets $buckets, classic bucket series $classic"
fi

ex=$(curl -fsS --get --data-urlencode 'query={__name__=~"plantstore_http_request_duration_seconds(_bucket)?", job="plantstore"}' \
  --data-urlencode "start=$load_t0" --data-urlencode "end=$(date +%s)" "$PROM/api/v1/query_exemplars" || echo '{"data": []}')
ex_total=$(jq '[.data[].exemplars[]] | length' <<<"$ex")
ex_by_name=$(jq -c '[.data[] | {n: .seriesLabels.__name__, c: (.exemplars | length)}] | group_by(.n) | map({(.[0].n): (map(.c) | add)}) | add // {}' <<<"$ex")
ex_bad=$(jq '[.data[].exemplars[] | select((.labels.trace_id // "") | test("^[0-9a-f]{32}$") | not)] | length' <<<"$ex")
# Up to 20 of the trace ids, of exemplars older than the SDK's export delay
# (5 s) and the Collector's batch, and then some: Jaeger must have them.
ids=$(jq -r --argjson before "$(($(date +%s) - 12))" '[.data[].exemplars[] | select(.timestamp <= $before) | .labels.trace_id] | unique | .[:20] | join(" ")' <<<"$ex")
# shellcheck disable=SC2086
rcv=$(jaeger_found $ids) looked=$(wc -w <<<"$ids")
TRACING_EXEMPLARS=$rcv/$looked # 65-tracing.sh's figures repeat it
echo "exemplars by series name: $ex_by_name"
if ((ex_total > 0 && ex_bad == 0 && rcv == looked && looked > 0)); then
  pass "exemplars: $ex_total from /api/v1/query_exemplars, every trace_id 32 hex digits; $looked of $looked looked up are traces in Jaeger (metric -> trace)"
else
  fail "exemplars: $ex_total, $ex_bad malformed, $rcv of $looked are traces in Jaeger"
fi
figures "prometheus-ingest targets_up=$up native_rate_plants=$native_rate native_buckets=$buckets classic_bucket_series=$classic exemplars=$ex_total exemplars_by_name=$ex_by_name exemplar_traces=$TRACING_EXEMPLARS"

stage "the chart's Redis exporter (redis.metrics): its target, memory against maxmemory, an AOF rewrite, the replica's lag"
t=$SECONDS redis_up=$(targets_up plantstore-redis 1)
if ((redis_up == 1)); then
  pass "the Redis exporter's target is up, job=\"plantstore-redis\" (the chart's Redis ServiceMonitor), after $((SECONDS - t))s"
else
  fail "Redis exporter targets up: $redis_up of 1"
  papi /api/v1/targets | jq -c '.data.activeTargets[]? | select(.labels.job == "plantstore-redis") | {health, lastError}'
  kubectl get pod -n "$APP_NS" "$REL-redis-0" -o wide || true
  kubectl logs -n "$APP_NS" "$REL-redis-0" -c redis-exporter --tail=10 || true
fi
# An AOF rewrite, as Redis starts one when the file has doubled: the last
# rewrite's duration goes from -1 (none since start) to the rewrite's.
kubectl exec -n "$APP_NS" "$REL-redis-0" -c redis -- redis-cli bgrewriteaof >/dev/null ||
  fail "BGREWRITEAOF in $REL-redis-0"
# rq QUERY: the first value of an instant query, or "none".
rq() { pq "$1" | jq -r '.[0].value[1] // "none"'; }
rsel='job="plantstore-redis"'
t=$SECONDS
until ((SECONDS - t > 60)); do
  rewrite_s=$(rq "redis_aof_last_rewrite_duration_sec{$rsel}") replicas=$(rq "redis_connected_slaves{$rsel}")
  lag_s=$(rq "max(redis_connected_slave_lag_seconds{$rsel})")
  [[ $rewrite_s != none && $rewrite_s != -1 && $replicas == 1 && $lag_s != none ]] && break
  sleep 2
done
used=$(rq "redis_memory_used_bytes{$rsel}") maxmem=$(rq "redis_memory_max_bytes{$rsel}")
rewrite_ok=$(rq "redis_aof_last_bgrewrite_status{$rsel}") aof_bytes=$(rq "redis_aof_current_size_bytes{$rsel}")
lag_bytes=$(rq "max(redis_master_repl_offset{$rsel}) - max(redis_connected_slave_offset_bytes{$rsel})")
if [[ $used != none && $maxmem == "$REDIS_MAXMEMORY_BYTES" ]] && jq -en "$used > 0 and $used < $maxmem" >/dev/null; then
  pass "Redis memory in Prometheus: used $used bytes against maxmemory $maxmem (redis.maxmemory=$REDIS_MAXMEMORY)"
else
  fail "Redis memory: used $used, maxmemory $maxmem (want $REDIS_MAXMEMORY_BYTES)"
fi
if [[ $rewrite_s != none && $rewrite_s != -1 && $rewrite_ok == 1 ]]; then
  pass "Redis AOF rewrite in Prometheus: the scenario's BGREWRITEAOF took ${rewrite_s}s, status ok; the AOF $aof_bytes bytes"
else
  fail "Redis AOF rewrite: last duration $rewrite_s (want >= 0 after BGREWRITEAOF), status $rewrite_ok"
fi
if [[ $replicas == 1 && $lag_s != none && $lag_bytes != none ]]; then
  pass "Redis replication in Prometheus: 1 connected replica (pod redis-replica), lag ${lag_s}s and $lag_bytes bytes"
else
  fail "Redis replication: $replicas connected replica(s), lag $lag_s s, $lag_bytes bytes"
  kubectl logs -n "$APP_NS" redis-replica --tail=10 || true
fi
figures "prometheus-redis target_up=$redis_up used_bytes=$used maxmemory_bytes=$maxmem aof_bytes=$aof_bytes aof_last_rewrite_s=$rewrite_s aof_rewrite_ok=$rewrite_ok replicas=$replicas lag_s=$lag_s lag_bytes=$lag_bytes"

# full_store: the store filled up (contract section 12), run by the outage
# watcher below once Redis is back, while the unavailability alert resolves:
# Redis's maxmemory lowered to just above what it uses, then creates at
# 50/s until PlantstoreStoreFull fires: creates answer 507 50701, a read, a
# list and a delete of an existing plant still work, nothing restarts.
# Writes key=value lines to $full_file for prometheus_outage to judge.
full_file=$CLUSTER_DIR/prometheus-full
full_store() {
  local redis=(kubectl exec -n "$APP_NS" "$REL-redis-0" -c redis -- redis-cli -h 127.0.0.1 --raw) ip token used t st fired=0 s i
  local restarts_before restarts_after get list del
  restarts() { kubectl get pods -n "$APP_NS" -l "app.kubernetes.io/instance=$REL" -o jsonpath='{range .items[*]}{.metadata.name}={.status.containerStatuses[*].restartCount} {end}'; }
  ip=$(kubectl get svc -n "$APP_NS" "$REL" -o jsonpath='{.spec.clusterIP}')
  token=$(api_token "$APP_NS")
  # A plant stored before it fills, to read, list and delete while full
  # (Redis has just come back: the first creates may still answer 503).
  for _ in $(seq 30); do
    [[ $(node_plant "$APP_NS" POST 424242) == 200 ]] && break
    sleep 1
  done
  restarts_before=$(restarts)
  used=$("${redis[@]}" info memory | tr -d '\r' | sed -n 's/^used_memory://p')
  "${redis[@]}" config set maxmemory $((used + 262144)) >/dev/null
  RATE=50 load_start "$APP_NS" load-full 100
  t=$(ms)
  # A create of its own while the load fills the store, new ids until one
  # is refused: the answer a client gets. Bounded by the load's time, not a
  # count of tries: when the store fills depends on the pod's start and on
  # what Redis counts as used (seen from 30 s to past 70 s into the load).
  # After the load its connections' buffers, freed, leave room again.
  i=0
  while (($(ms) - t < 100000)); do
    i=$((i + 1))
    full_body=$(node_curl -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -X POST "http://$ip:8080/plants" -d "{\"id\": $((424242 + i)), \"name\": \"one too many\"}")
    [[ $(jq -r .error <<<"$full_body" 2>/dev/null) == 50701 ]] && break
    sleep 0.5
  done
  # The alert's `for` is 1m after the first refusal, which may come late in
  # the load (above): up to 200 s from the load's start.
  while (($(ms) - t < 200000)); do
    st=$(papi /api/v1/alerts | jq -r '[.data.alerts[]? | select(.labels.alertname == "PlantstoreStoreFull") | .state] | if any(. == "firing") then "firing" else "" end')
    [[ $st == firing ]] && { fired=$(($(ms) - t)); break; }
    sleep 2
  done
  get=$(node_curl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://$ip:8080/plants/424242")
  list=$(node_curl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://$ip:8080/plants?limit=5")
  del=$(node_curl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" -X DELETE "http://$ip:8080/plants/424242")
  s=$(load_result "$APP_NS" load-full) || s='{}'
  "${redis[@]}" config set maxmemory "$REDIS_MAXMEMORY_BYTES" >/dev/null
  restarts_after=$(restarts)
  {
    echo "fired_ms=$fired"
    echo "get=$get list=$list delete=$del"
    echo "full_body=$(jq -c . <<<"$full_body" 2>/dev/null || echo "$full_body")"
    echo "codes=$(jq -c .Codes <<<"$s") acknowledged=$(jq .Acknowledged <<<"$s") verified=$(jq .Verified <<<"$s") lost=$(jq '.Lost | length' <<<"$s") transport_errors=$(jq .TransportErrors <<<"$s")"
    echo "restarts_before=[$restarts_before] restarts_after=[$restarts_after]"
  } >"$full_file"
}

stage "Redis down under load: PlantstoreStoreUnavailable pending -> firing -> resolved (watched in the background)"
alert=PlantstoreStoreUnavailable
# Its `for`, read from the rules (minutes), in seconds.
alert_for=$(($(awk -v a="alert: $alert\$" '$0 ~ a {f = 1} f && /^ *for:/ {sub(/.*for: */, ""); sub(/m$/, ""); print; exit}' "$CHART/files/prometheus-rules.yaml") * 60))
alert_state() { papi /api/v1/alerts | jq -r --arg a "$alert" 'if .data.alerts == null then "unknown" else [.data.alerts[] | select(.labels.alertname == $a) | .state] | if length == 0 then "inactive" elif any(. == "firing") then "firing" else "pending" end end'; }
RATE=100 load_start "$APP_NS" load-outage 240
sleep 3
t_down=$(ms)
kubectl scale statefulset -n "$APP_NS" "$REL-redis" --replicas=0 >/dev/null
# The alert waits out its `for` (2 minutes) and its 5-minute rate window:
# the next scenarios run meanwhile, in their own namespaces, and
# prometheus_outage (after the last one) checks what this watcher wrote:
# when the alert went pending and firing, when Redis was Ready again, and
# when the alert resolved.
outage_file=$CLUSTER_DIR/prometheus-outage
(
  t_pending=0 t_firing=0 t_resolved=0
  while (($(ms) - t_down < (alert_for + 90) * 1000)); do
    st=$(alert_state)
    [[ $st == pending ]] && ((t_pending == 0)) && t_pending=$(ms)
    if [[ $st == firing ]]; then t_firing=$(ms); ((t_pending)) || t_pending=$t_firing; break; fi
    sleep 1
  done
  kubectl scale statefulset -n "$APP_NS" "$REL-redis" --replicas=1 >/dev/null
  t_up=$(ms)
  until kubectl get pod -n "$APP_NS" "$REL-redis-0" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True; do
    (($(ms) - t_up < 120000)) || break
    sleep 0.5
  done
  t_ready=$(ms)
  kubectl delete pod -n "$APP_NS" load-outage --wait=false >/dev/null
  echo "$t_pending $t_firing $t_up $t_ready 0" >"$outage_file"
  full_store >"$CLUSTER_DIR/logs/prometheus-full.log" 2>&1 || true
  while (($(ms) - t_ready < 420000)); do
    [[ $(alert_state) == inactive ]] && { t_resolved=$(ms); break; }
    sleep 2
  done
  echo "$t_pending $t_firing $t_up $t_ready $t_resolved" >"$outage_file"
) &
outage_pid=$!
prom_scenario_s=$((SECONDS - prom_t0))

prometheus_outage() {
  stage "prometheus: $alert pending -> firing -> resolved around the outage (watched meanwhile); every dashboard target and rule on its data"
  wait "$outage_pid" 2>/dev/null || true
  local t_pending t_firing t_up t_ready t_resolved pending_s firing_s resolved_s dump=$CLUSTER_DIR/dashboard-panels.json
  read -r t_pending t_firing t_up t_ready t_resolved <"$outage_file" 2>/dev/null || { t_pending=0 t_firing=0 t_up=0 t_ready=0 t_resolved=0; }
  pending_s=$(((t_pending - t_down) / 1000)) firing_s=$(((t_firing - t_down) / 1000))
  if ((t_firing && t_firing - t_down <= (alert_for + 30) * 1000)); then
    pass "$alert pending ${pending_s}s and firing ${firing_s}s after Redis went down (for: ${alert_for}s, + scrape and evaluation every 5s)"
  else
    fail "$alert: pending after ${pending_s}s, firing after ${firing_s}s (want firing within ${alert_for}s + 30s)"
  fi
  ((t_ready - t_up < 120000)) || fail "Redis not Ready again within 120s"
  figures "prometheus alert=$alert for_s=$alert_for pending_after_s=$pending_s firing_after_s=$firing_s redis_down_s=$(((t_ready - t_down) / 1000)) scrape_interval_s=5 eval_interval_s=5 scenario_s=$prom_scenario_s"

  # The dashboard and the rules on the data of this scenario (load, outage
  # and recovery in range).
  (cd "$REPO/tools" && GOWORK=off go run ./monitoring/cmd/prom-check -prometheus "$PROM" \
    -rules "$CHART/files/prometheus-rules.yaml" -dashboard "$CHART/files/grafana-dashboard.json" \
    -start "$load_t0" -dump "$dump") >"$CLUSTER_DIR/logs/prom-check.log" 2>&1 || true
  local line
  while IFS= read -r line; do
    case $line in
      PASS*) pass "${line#PASS  }" ;;
      FAIL*) fail "${line#FAIL  }" ;;
      *) echo "$line" ;;
    esac
  done <"$CLUSTER_DIR/logs/prom-check.log"
  grep -q '^PASS' "$CLUSTER_DIR/logs/prom-check.log" || fail "prom-check ran no check: $(tail -n 3 "$CLUSTER_DIR/logs/prom-check.log")"
  if (cd "$REPO/tools/monitoring/cmd/dashboard-png" && GOWORK=off go run . -in "$dump" -out "$PNG" \
    -outage "$((t_down / 1000)),$((t_ready / 1000))" \
    -title "plantstore dashboard (main panels) from Prometheus $prom_build_version on the test cluster") >"$CLUSTER_DIR/logs/dashboard-png.log" 2>&1; then
    pass "main panels drawn from the real Prometheus data: $PNG ($(stat -c %s "$PNG") bytes)"
  else
    fail "dashboard-png: $(tail -n 3 "$CLUSTER_DIR/logs/dashboard-png.log")"
  fi

  # The full store, filled while the outage alert resolved.
  local fired get list del codes body before after
  fired=$(sed -n 's/^fired_ms=//p' "$full_file" 2>/dev/null)
  read -r get list del <<<"$(sed -n 's/^get=\([0-9]*\) list=\([0-9]*\) delete=\([0-9]*\)$/\1 \2 \3/p' "$full_file" 2>/dev/null)"
  codes=$(sed -n 's/^codes=\([^ ]*\) .*/\1/p' "$full_file" 2>/dev/null)
  body=$(sed -n 's/^full_body=//p' "$full_file" 2>/dev/null)
  before=$(sed -n 's/^restarts_before=\[\(.*\)\] restarts_after=.*/\1/p' "$full_file" 2>/dev/null)
  after=$(sed -n 's/.* restarts_after=\[\(.*\)\]$/\1/p' "$full_file" 2>/dev/null)
  figures "prometheus-full-store $(tr '\n' ' ' <"$full_file" 2>/dev/null)"
  if [[ ${fired:-0} -gt 0 && $get == 200 && $list == 200 && $del == 204 && $(jq -r .error <<<"$body" 2>/dev/null) == 50701 && -n $before && $before == "$after" ]] &&
    grep -q 'lost=0 transport_errors=0' "$full_file" && jq -e 'has("507") and (keys - ["200", "507"] | length == 0)' <<<"${codes:-null}" >/dev/null; then
    pass "store full (maxmemory lowered under load): creates answered 507 50701 ($codes), PlantstoreStoreFull firing ${fired}ms after the load began; a read, a list and a delete of a stored plant 200, 200, 204; every acknowledged plant stored; no container restarted"
  else
    fail "full store: $(tr '\n' ' ' <"$full_file" 2>/dev/null || echo "no result (the watcher did not get there)")"
  fi

  # It resolves only when its 5-minute rate window no longer holds a 503.
  resolved_s=$(((t_resolved - t_ready) / 1000))
  if ((t_resolved)); then
    pass "$alert resolved ${resolved_s}s after Redis was Ready again (its rate windows are 5m)"
  else
    fail "$alert still $(alert_state) 420s after Redis was Ready again"
  fi
  figures "prometheus-resolved alert=$alert resolved_after_ready_s=$resolved_s"
  kill "$pf_pid" 2>/dev/null || true
  kubectl delete prometheus -n "$PROM_NS" plantstore --wait=false >/dev/null 2>&1 || true
  kubectl delete namespace "$APP_NS" "$PROM_NS" --wait=false >/dev/null
  kubectl delete clusterrole,clusterrolebinding prometheus prometheus-operator --ignore-not-found >/dev/null
  kubectl delete service,endpoints -n kube-system kubelet --ignore-not-found >/dev/null
}
later prometheus_outage
