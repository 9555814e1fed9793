# shellcheck shell=bash
# Traces through the parts a user runs: the chart sends them to the
# OpenTelemetry Collector at the address its README names, the Collector
# (tools/k8s/client-go-0.36/otelcol, configured by charts/plantstore/files/otel-collector*.yaml)
# sends them to Jaeger v2 (tools/k8s/jaeger), and every check reads them
# back from Jaeger's query API (lib/observability.sh). Two releases side by
# side: "head" with the chart's default sampling (parentbased_traceidratio,
# 10 %) and "traced" with otel.sampler=always_on, on head's Redis under a
# key prefix of its own (one volume, and one outage for both).
#
# Shown: a create sent with a traceparent is a trace in Jaeger with the
# server span under the caller's span, its Redis spans as the server span's
# children and the pod's resource attributes (the pod's own k8s.pod.name,
# namespace and node; k8sattributes' k8s.deployment.name); its webhook
# delivery is a trace whose span link resolves to a span of the create's
# trace; the trace_id of its access-log line is that trace; at the default
# sampling, the delivery of a sampled create is traced too. Then "traced"
# moves to the Collector with the tail-sampling recipe
# (files/otel-collector-tail-sampling.yaml): the same load on both releases
# at once gives what always_on costs the service (CPU seconds per request
# of the API pods, and the load's p99, as ratios to the default's); and a
# Redis outage of both under load shows that with tail sampling every 503
# leaves an error trace, where head sampling keeps about one in ten.
#
# The exemplar -> trace figure is 35-prometheus.sh's (Prometheus scrapes
# that scenario's release), repeated in this scenario's figures line.

# shellcheck source=/dev/null
source "$TOOLS_MOD/cluster-test.d/lib/observability.sh"
TR_NS=trace-app
TR_HEAD=plantstore-head TR_ON=plantstore-traced
tr_t0=$SECONDS

# The spans of a trace as Jaeger's API v3 returns it (OTLP JSON), each with
# its resource's attributes as .res; attribute values, span kinds and
# status codes whichever way the JSON spells them.
# shellcheck disable=SC2016
TR_JQ='
def spans: [.result.resourceSpans[]? | .resource.attributes as $res | .scopeSpans[]?.spans[]? | . + {res: $res}];
def attr($k): [.[]? | select(.key == $k) | .value | (.stringValue // .intValue // .boolValue // .doubleValue)] | first | tostring;
def server: .kind == 2 or .kind == "SPAN_KIND_SERVER";
def client: .kind == 3 or .kind == "SPAN_KIND_CLIENT";
def failed: .status.code == 2 or .status.code == "STATUS_CODE_ERROR";
def ancestors($all): ($all | map({key: .spanId, value: .parentSpanId}) | from_entries) as $up | [limit(8; .parentSpanId | recurse($up[.] // empty))];
'
# api_pods REL: the names of the release's API pods.
api_pods() { kubectl get pods -n "$TR_NS" -l "app.kubernetes.io/instance=$1,app.kubernetes.io/component=api" -o jsonpath='{.items[*].metadata.name}'; }
# access_lines REL [SINCE]: the access-log lines of the release's API pods
# (JSON), those since Unix time SINCE if given.
access_lines() {
  local p since=()
  [[ -z ${2:-} ]] || since=(--since-time="$(rfc3339 "$2")")
  for p in $(api_pods "$1"); do kubectl logs -n "$TR_NS" "$p" --tail=-1 "${since[@]}"; done |
    jq -c -R 'fromjson? | select(.logger == "access" and .msg == "request")'
}
# usage REL: the CPU seconds and the requests the release's API pods have
# counted (their /metrics, through the API server's pod proxy).
usage() {
  local p
  for p in $(api_pods "$1"); do
    kubectl get --raw "/api/v1/namespaces/$TR_NS/pods/$p:9090/proxy/metrics" |
      awk '/^process_cpu_seconds_total / {c += $2} /^plantstore_http_requests_total\{/ {r += $2} END {printf "%.4f %d\n", c, r}'
  done | awk '{c += $1; r += $2} END {printf "%.4f %d\n", c, r}'
}
rfc3339() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
# deliveries SINCE: the traces of the webhook deliveries Jaeger has from Unix
# time SINCE on ({} when the search fails).
deliveries() {
  curl -fs --get --data-urlencode query.service_name=plantstore --data-urlencode "query.operation_name=webhook plant.created" \
    --data-urlencode "query.start_time_min=$(rfc3339 "$1")" --data-urlencode "query.start_time_max=$(rfc3339 $(($(date +%s) + 5)))" \
    --data-urlencode query.num_traces=1000 "$JAEGER/api/v3/traces" || echo '{}'
}

stage "tracing: Jaeger and the Collector; two releases exporting to otel-collector.$OBS_NS:4318 (sampling: the chart's default; always_on)"
observability_up
restricted_ns "$TR_NS"
tr_token=$(hex 16) tr_whsec=whsec_$(head -c 24 /dev/urandom | base64)
# Small CPU requests: the releases of the scenarios before this one still
# hold most of the node's 2 cores (requests only; nothing is limited).
tr_install() {
  helm install "$1" "$CHART" -n "$TR_NS" "${APP_IMAGE[@]}" "${APISERVER_METRICS[@]}" \
    --set-string "auth.tokens[0]=$tr_token name=load" --set resources.requests.cpu=10m --set redis.resources.requests.cpu=10m \
    --set otel.endpoint=http://otel-collector.observability:4318 \
    --set-string "webhooks.subscribers[0]=http://webhook-receiver.$OBS_NS.svc:8080/hooks/plantstore $tr_whsec" \
    --set "webhooks.allowCIDRs={10.96.0.0/16}" "${@:2}" --wait --timeout 180s >"$CLUSTER_DIR/logs/install-$1.log" 2>&1
}
t=$SECONDS
# $TR_ON's pods (the API and its migration Job) use $TR_HEAD's Redis: its
# NetworkPolicy admits them by their release's label.
if tr_install "$TR_HEAD" --set-json "networkPolicy.redis.extraIngress=[{\"from\": [{\"podSelector\": {\"matchLabels\": {\"app.kubernetes.io/instance\": \"$TR_ON\"}}}], \"ports\": [{\"port\": 6379}]}]" &&
  tr_install "$TR_ON" --set otel.sampler=always_on --set redis.enabled=false \
  --set "externalRedis.addresses={$TR_HEAD-redis:6379}" --set "externalRedis.existingSecret=$TR_HEAD-redis" \
  --set externalRedis.existingSecretKey=redis-password --set-string config.redis.keyPrefix=traced:; then
  pass "$TR_HEAD (otel.sampler $(helm get values -n "$TR_NS" "$TR_HEAD" -a -o json | jq -r .otel.sampler) $(helm get values -n "$TR_NS" "$TR_HEAD" -a -o json | jq -r .otel.samplerArg)) and $TR_ON (always_on) Ready in $((SECONDS - t))s"
else
  fail "helm install of the tracing releases"; tail -n 20 "$CLUSTER_DIR/logs/install-$TR_HEAD.log" "$CLUSTER_DIR/logs/install-$TR_ON.log"
fi

stage "tracing: creates with a traceparent followed into Jaeger: server span, Redis children, resource, webhook delivery, access log"
on_deploy=$(kubectl get deployment -n "$TR_NS" -l "app.kubernetes.io/instance=$TR_ON,app.kubernetes.io/component=api" -o jsonpath='{.items[*].metadata.name}')
on_pods=" $(api_pods "$TR_ON") "
# pod=node of each of them: the node a span's resource names must be its pod's.
on_pod_nodes=" $(for p in $on_pods; do printf '%s=%s ' "$p" "$(pod_node "$TR_NS" "$p")"; done)"
declare -a tids=() sids=() rids=() plants=()
script=''
for i in 1 2 3 4 5; do
  tids+=("$(hex 16)") sids+=("$(hex 8)") rids+=("scenario-trace-$i-$(hex 4)") plants+=("$((900000 + i))")
  script+="curl -s -o /dev/null -w '%{http_code} ' -X POST http://$TR_ON:8080/plants -H 'Authorization: Bearer $tr_token' \
-H 'Content-Type: application/json' -H 'traceparent: 00-${tids[-1]}-${sids[-1]}-01' -H 'X-Request-Id: ${rids[-1]}' \
-d '{\"id\": ${plants[-1]}, \"name\": \"traced\"}'
"
done
tr_from=$(($(date +%s) - 5))
codes=$(client "$TR_NS" traced-creates "$script")
echo "creates with a traceparent: $codes"
# Each create: its server span, its Redis create-script child and its
# webhook delivery's span are expected; found when Jaeger has them as
# described. The SDK exports every 5s, the Collector batches, the outbox
# relays the delivery: poll.
expected=$((3 * ${#tids[@]})) found=0 links=0 links_ok=0 res_ok=0
declare -A tr_json=()
t=$SECONDS
while :; do
  found=0 links=0 links_ok=0 res_ok=0
  delivered=$(deliveries "$tr_from")
  for i in "${!tids[@]}"; do
    if [[ -z ${tr_json[$i]:-} ]]; then
      j=$(jaeger_trace "${tids[$i]}")
      # Kept once the server span and a child are in.
      if (($(jq "$TR_JQ spans | length" <<<"$j") > 1)); then tr_json[$i]=$j; fi
    fi
    j=${tr_json[$i]:-'{}'}
    # The server span: under the caller's span, named by its route.
    srv=$(jq -c --arg p "${sids[$i]}" "$TR_JQ [spans[] | select(server and .parentSpanId == \$p and .name == \"POST /plants\")] | first // empty" <<<"$j")
    [[ -n $srv ]] || continue
    found=$((found + 1))
    sid=$(jq -r .spanId <<<"$srv")
    # Its Redis spans: the create script a child of it, and every other span
    # of the trace a Redis client span under it (a new connection's HELLO
    # nests under the command that dialled it).
    if jq -e --arg s "$sid" "$TR_JQ spans as \$all | [\$all[] | select(.spanId != \$s)] as \$o | (\$o | length) > 0 and
      all(\$o[]; client and (.attributes | attr(\"db.system\")) == \"redis\" and any(ancestors(\$all)[]; . == \$s)) and
      any(\$o[]; (.name == \"evalsha\" or .name == \"eval\") and .parentSpanId == \$s)" <<<"$j" >/dev/null; then
      found=$((found + 1))
    fi
    if jq -e --arg pods "$on_pod_nodes" --arg ns "$TR_NS" --arg dep "$on_deploy" \
      '.res as $r | def a($k): [$r[] | select(.key == $k) | .value.stringValue] | first;
       ($pods | contains(" " + a("k8s.pod.name") + "=" + a("k8s.node.name") + " ")) and a("k8s.namespace.name") == $ns and a("k8s.deployment.name") == $dep' <<<"$srv" >/dev/null; then
      res_ok=$((res_ok + 1))
    fi
    # The delivery of its plant: a span of another trace, linked to a span
    # of this one.
    dl=$(jq -c --arg id "${plants[$i]}" "$TR_JQ [spans[] | select(client and (.attributes | attr(\"plant.id\")) == \$id)] | first // empty" <<<"$delivered")
    [[ -n $dl ]] || continue
    found=$((found + 1))
    while read -r lt ls; do
      links=$((links + 1))
      [[ $lt == "${tids[$i]}" ]] && jq -e --arg s "$ls" "$TR_JQ any(spans[]; .spanId == \$s)" <<<"$j" >/dev/null && links_ok=$((links_ok + 1))
    done < <(jq -r '.links[]? | "\(.traceId) \(.spanId)"' <<<"$dl")
  done
  (( (found == expected && links_ok == ${#tids[@]}) || SECONDS - t > 40 )) && break
  sleep 2
done
echo "one create's trace in Jaeger: $(jq -c "$TR_JQ [spans[] | {name, parent: .parentSpanId, kind}]" <<<"${tr_json[0]:-'{}'}")"
if ((found == expected)); then
  pass "spans in Jaeger: $found of $expected (per create: the server span under the caller's traceparent, its Redis spans as children with the create script, its webhook delivery) after $((SECONDS - t))s"
else
  fail "spans in Jaeger: $found of $expected after $((SECONDS - t))s"
fi
if ((res_ok == ${#tids[@]})); then
  pass "resource of every create's spans: k8s.pod.name of a $TR_ON pod, k8s.namespace.name=$TR_NS, k8s.node.name its pod's node (the chart), k8s.deployment.name=$on_deploy (the Collector's k8sattributes)"
else
  fail "resource attributes right on $res_ok of ${#tids[@]} creates: $(jq -c '.res' <<<"${srv:-'{}'}")"
fi
if ((links == ${#tids[@]} && links_ok == links)); then
  pass "webhook deliveries: each its own trace, its span link resolving to a span of its create's trace ($links_ok of $links)"
else
  fail "webhook delivery links: $links_ok of $links resolve (want ${#tids[@]})"
fi
# log -> trace: the trace_id of each create's access-log line.
lines=$(access_lines "$TR_ON")
log_looked=0 log_hits=0
for i in "${!rids[@]}"; do
  id=$(jq -r --arg r "${rids[$i]}" 'select(.request_id == $r) | .trace_id' <<<"$lines" | head -n 1)
  [[ -n $id ]] || continue
  log_looked=$((log_looked + 1))
  [[ $id == "${tids[$i]}" ]] && (($(jaeger_found "$id") == 1)) && log_hits=$((log_hits + 1))
done
if ((log_looked == ${#rids[@]} && log_hits == log_looked)); then
  pass "access log -> trace: the trace_id of each create's access line (found by its X-Request-Id) is its trace in Jaeger ($log_hits of $log_looked)"
else
  fail "access log -> trace: $log_hits of $log_looked lines (of ${#rids[@]} creates) lead to their trace"
fi

# At the chart's default sampling, a sampled create's delivery is sampled
# with it: the ratio samplers sample a span that starts a trace when one of
# its links is sampled. Five creates to $TR_HEAD with a sampled traceparent.
declare -a hd_tids=() hd_plants=()
script=''
for i in 1 2 3 4 5; do
  hd_tids+=("$(hex 16)") hd_plants+=("$((910000 + i))")
  script+="curl -s -o /dev/null -w '%{http_code} ' -X POST http://$TR_HEAD:8080/plants -H 'Authorization: Bearer $tr_token' \
-H 'Content-Type: application/json' -H 'traceparent: 00-${hd_tids[-1]}-$(hex 8)-01' \
-d '{\"id\": ${hd_plants[-1]}, \"name\": \"traced\"}'
"
done
hd_from=$(($(date +%s) - 5))
echo "creates with a sampled traceparent to $TR_HEAD: $(client "$TR_NS" head-traced-creates "$script")"
t=$SECONDS
while :; do
  delivered=$(deliveries "$hd_from")
  head_links=0
  for i in "${!hd_tids[@]}"; do
    jq -e --arg id "${hd_plants[$i]}" --arg t "${hd_tids[$i]}" \
      "$TR_JQ any(spans[]; client and (.attributes | attr(\"plant.id\")) == \$id and any(.links[]?; .traceId == \$t))" <<<"$delivered" >/dev/null &&
      head_links=$((head_links + 1))
  done
  ((head_links == ${#hd_tids[@]} || SECONDS - t > 30)) && break
  sleep 2
done
if ((head_links == ${#hd_tids[@]})); then
  pass "at the default sampling ($TR_HEAD): the webhook delivery of each sampled create traced, linked to its create's trace ($head_links of ${#hd_tids[@]})"
else
  fail "at the default sampling ($TR_HEAD): $head_links of ${#hd_tids[@]} sampled creates' deliveries traced with their link"
fi

stage "tracing: $TR_ON to the tail-sampling Collector; what always_on costs the service, under the same load as the default"
t=$SECONDS
if logged "upgrade-$TR_ON" "helm upgrade $TR_ON to the tail-sampling Collector" helm upgrade "$TR_ON" "$CHART" -n "$TR_NS" \
  --reuse-values --set otel.endpoint=http://otel-collector-tail.observability:4318 --wait --timeout 180s; then
  pass "$TR_ON upgraded to otel.endpoint=http://otel-collector-tail.observability:4318 (always_on; the Collector keeps errors, slow traces and 10 % of the rest) in $((SECONDS - t))s"
fi
read -r head_cpu0 head_req0 <<<"$(usage "$TR_HEAD")"
read -r on_cpu0 on_req0 <<<"$(usage "$TR_ON")"
load_start "$TR_NS" load-head 20 "http://$TR_HEAD:8080" "$TR_HEAD-tokens"
load_start "$TR_NS" load-traced 20 "http://$TR_ON:8080" "$TR_ON-tokens"
head_load=$(load_result "$TR_NS" load-head || echo '{}')
on_load=$(load_result "$TR_NS" load-traced || echo '{}')
read -r head_cpu1 head_req1 <<<"$(usage "$TR_HEAD")"
read -r on_cpu1 on_req1 <<<"$(usage "$TR_ON")"
read -r head_us on_us cost_cpu cost_p99 <<<"$(awk -v a="$head_cpu0" -v b="$head_cpu1" -v ra="$head_req0" -v rb="$head_req1" \
  -v c="$on_cpu0" -v d="$on_cpu1" -v rc="$on_req0" -v rd="$on_req1" \
  -v hp="$(jq '.LatencyP99Ms // 0' <<<"$head_load")" -v op="$(jq '.LatencyP99Ms // 0' <<<"$on_load")" \
  'BEGIN {h = (rb > ra) ? (b - a) / (rb - ra) : 0; o = (rd > rc) ? (d - c) / (rd - rc) : 0
          printf "%.1f %.1f %.2f %.2f\n", h * 1e6, o * 1e6, (h > 0) ? o / h : 0, (hp > 0) ? op / hp : 0}')"
echo "default sampling: $((head_req1 - head_req0)) requests, ${head_us}µs CPU each, load $(jq -c '{Codes, LatencyP50Ms, LatencyP99Ms}' <<<"$head_load")"
echo "always_on to the tail-sampling Collector: $((on_req1 - on_req0)) requests, ${on_us}µs CPU each, load $(jq -c '{Codes, LatencyP50Ms, LatencyP99Ms}' <<<"$on_load")"
if [[ $cost_cpu != 0.00 ]] && jq -e '.Codes["200"] > 0' <<<"$head_load" >/dev/null && jq -e '.Codes["200"] > 0' <<<"$on_load" >/dev/null; then
  pass "always_on costs the service ${cost_cpu}x the default's CPU per request (${on_us} against ${head_us}µs, API pods' process_cpu_seconds_total over plantstore_http_requests_total) and ${cost_p99}x its p99, both loaded at ${RATE}/s for 20s at once"
else
  fail "cost of always_on: CPU per request ${on_us} against ${head_us}µs, loads $(jq -c .Codes <<<"$head_load") $(jq -c .Codes <<<"$on_load")"
fi
# log -> trace at the default sampling: most access lines lead to no trace.
head_ids=$(access_lines "$TR_HEAD" | jq -r 'select(.route == "/plants" and .status == 200) | .trace_id' | shuf -n 100)
# shellcheck disable=SC2086
head_log_hits=$(jaeger_found $head_ids) head_log_looked=$(wc -w <<<"$head_ids")
echo "access log -> trace at the default sampling: $head_log_hits of $head_log_looked lines of $TR_HEAD's load have their trace"

stage "tracing: Redis down under load of both releases: every 503 an error trace with tail sampling"
out_from=$(date +%s)
# 25 creates/s: a few hundred 503s each, every one of the tail-sampled
# release's looked up in Jaeger (the lookups are most of this stage's time).
RATE=25 load_start "$TR_NS" outage-head 30 "http://$TR_HEAD:8080" "$TR_HEAD-tokens"
RATE=25 load_start "$TR_NS" outage-traced 30 "http://$TR_ON:8080" "$TR_ON-tokens"
sleep 8
kubectl scale statefulset -n "$TR_NS" "$TR_HEAD-redis" --replicas=0 >/dev/null
kubectl wait -n "$TR_NS" --for=delete pod "$TR_HEAD-redis-0" --timeout=60s >/dev/null 2>&1 || true
sleep 6
kubectl scale statefulset -n "$TR_NS" "$TR_HEAD-redis" --replicas=1 >/dev/null
t=$SECONDS
until kubectl get pod -n "$TR_NS" "$TR_HEAD-redis-0" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True; do
  ((SECONDS - t < 120)) || { fail "Redis not Ready again within 120s"; break; }
  sleep 0.5
done
head_out=$(load_result "$TR_NS" outage-head || echo '{}')
on_out=$(load_result "$TR_NS" outage-traced || echo '{}')
t_end=$SECONDS
echo "during the outage: $TR_HEAD $(jq -c .Codes <<<"$head_out"), $TR_ON $(jq -c .Codes <<<"$on_out")"
# The 503s' trace ids, from their access-log lines (one each).
on_access=$(access_lines "$TR_ON" "$out_from")
on_errs=$(jq -r 'select(.status == 503) | .trace_id' <<<"$on_access" | sort -u)
head_all=$(access_lines "$TR_HEAD" "$out_from" | jq -r 'select(.status == 503) | .trace_id' | sort -u)
# Head sampling keeps a share, not each one: 150 of its 503s, at random, tell it.
head_errs=$(shuf -n 150 <<<"$head_all")
on_503=$(jq '.Codes["503"] // 0' <<<"$on_out") head_503=$(jq '.Codes["503"] // 0' <<<"$head_out")
on_lines=$(wc -w <<<"$on_errs") head_lines=$(wc -w <<<"$head_errs") head_all_lines=$(wc -w <<<"$head_all")
# The Collector decides a trace decision_wait (10s) after its first span,
# which the SDK sends within its 5s schedule: every decision is due 20s
# after the load. Look the 503s up from then (a trace looked up before its
# decision reads as missing), then ask again for any still missing, every
# 3s for up to 30s.
((SECONDS < t_end + 20)) && sleep $((t_end + 20 - SECONDS))
# shellcheck disable=SC2086
on_missing=$(jaeger_missing $on_errs)
t=$SECONDS
while [[ -n $on_missing ]] && ((SECONDS - t < 30)); do
  sleep 3
  # shellcheck disable=SC2086
  on_missing=$(jaeger_missing $on_missing)
done
missing_n=$(grep -c . <<<"$on_missing" || true)
on_kept=$((on_lines - missing_n))
found_s=$((SECONDS - t_end))
# shellcheck disable=SC2086
head_kept=$(jaeger_found $head_errs)
# What the tail sampler kept of the rest: the 200s of the same load, once
# the last of them are decided.
sleep $((16 - (SECONDS - t_end) > 0 ? 16 - (SECONDS - t_end) : 0))
on_ok=$(jq -r 'select(.status == 200 and .route == "/plants") | .trace_id' <<<"$on_access" | shuf -n 100)
# shellcheck disable=SC2086
on_ok_kept=$(jaeger_found $on_ok) on_ok_looked=$(wc -w <<<"$on_ok")
one=$(jaeger_trace "$(head -n 1 <<<"$on_errs")")
err_shape=$(jq -c "$TR_JQ [spans[] | {name, error: failed, code: (.attributes | attr(\"http.response.status_code\"))}]" <<<"$one")
echo "one 503's trace: $err_shape"
echo "rest kept by the tail sampler: $on_ok_kept of $on_ok_looked 200s of the outage load"
if ((on_503 > 0 && on_lines == on_503 && on_kept == on_lines)) &&
  jq -e "$TR_JQ any(spans[]; server and failed and (.attributes | attr(\"http.response.status_code\")) == \"503\")" <<<"$one" >/dev/null; then
  pass "tail sampling: the 503s of the outage error traces in Jaeger: $on_kept of $on_503 (their access lines' trace ids; found ${found_s}s after the load)"
else
  fail "tail sampling: $on_kept of $on_lines 503 access lines (the load counted $on_503) have their trace; one: $err_shape"
  # What the missing ones were: their access lines (time, duration, route).
  for id in $(head -n 3 <<<"$on_missing"); do
    echo "missing: $id $(jq -c --arg id "$id" 'select(.trace_id == $id) | {ts, time, status, duration, route, span_id}' <<<"$on_access")"
  done
fi
# Some, not most: a run that finds none has not looked.
if ((head_503 > 0 && head_kept > 0 && 2 * head_kept < head_lines)); then
  pass "head sampling (the chart's default) kept $head_kept of $head_lines of its $head_all_lines 503s' traces (looked up at random)"
else
  fail "head sampling: $head_kept of $head_lines 503s' traces kept (the load counted $head_503)"
fi
figures "tracing spans=$found/$expected links=$links_ok/$links links_head_sampling=$head_links/${#hd_tids[@]} exemplar_traces=${TRACING_EXEMPLARS:-not-run} log_traces=$log_hits/$log_looked log_traces_head_sampling=$head_log_hits/$head_log_looked errors_kept_tail=$on_kept/$on_503 errors_kept_head=$head_kept/$head_lines rest_kept_tail=$on_ok_kept/$on_ok_looked lookup_retries=$(jaeger_retries) cost_cpu_per_request=$cost_cpu cost_p99=$cost_p99 scenario_s=$((SECONDS - tr_t0))"
kubectl delete namespace "$TR_NS" --wait=false >/dev/null
