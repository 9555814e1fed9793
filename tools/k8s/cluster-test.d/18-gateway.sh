# shellcheck shell=bash
# The API through a Gateway, as a user moving to the Gateway API reaches it:
# a real implementation (lib/gateway.sh: Traefik as the GatewayClass's
# controller, a Gateway with an HTTPS listener) and the chart's HTTPRoute
# attached to it with the values its README shows, the two retry
# Middlewares (the retry503 plugin's, Traefik's) through the route's
# filters. Shown: the route is Accepted with its references resolved, and
# the contract holds over TLS
# through the Gateway: create, read, the list's Link followed as a client
# outside the Gateway follows it, delete, and 401, 403 and 429 with their
# headers as the service sent them; the admin paths are not routed; a
# store frozen beyond the route's retries reaches the caller as the
# service's 503, not the Gateway's timeout; a create sent with a traceparent is one trace in Jaeger: the
# caller's span, Traefik's spans under it, the service's server span under
# Traefik's (both export to the Collector, lib/observability.sh). Then,
# under an open-loop load of RATE creates/s through the Gateway, the API
# pods are rolled (helm upgrade) and a node holding an API pod and a
# Traefik pod is drained: no request fails.

# shellcheck source=/dev/null
source "$TOOLS_MOD/cluster-test.d/lib/gateway.sh"
# shellcheck source=/dev/null
source "$TOOLS_MOD/cluster-test.d/lib/observability.sh"
GW_APP=gateway-app

stage "a Gateway (Traefik, HTTPS listener) and the chart's HTTPRoute attached to it"
observability_up
t=$SECONDS
if logged gateway-up "the Gateway" gw_up; then
  pass "Gateway API $GATEWAY_API_VERSION CRDs (Standard channel), Traefik $(mod_version "$TOOLS_MOD/client-go-0.34" github.com/traefik/traefik/v3) on $(kubectl get pods -n "$GW_NS" -l app.kubernetes.io/name=traefik -o jsonpath='{range .items[*]}{.spec.nodeName} {end}'), Gateway $GW_NS/shared Programmed in $((SECONDS - t))s"
else
  kubectl get pods -n "$GW_NS" -o wide
  kubectl logs -n "$GW_NS" deployment/traefik --tail=30 || true
fi
restricted_ns "$GW_APP"
gw_attach "$GW_APP" "$CLUSTER_DIR/gateway-route-values.yaml"
gw_writer=$(hex 16) gw_reader=$(hex 16)
gw_limited=$(hex 16)
cat >"$CLUSTER_DIR/gateway-values.yaml" <<EOF
replicaCount: 3
auth:
  tokens: ["$gw_writer name=writer", "$gw_reader name=reader scopes=plants:read", "$gw_limited name=limited rate=2/m burst=2"]
otel: {endpoint: "http://otel-collector.observability:4318"}
EOF
t=$SECONDS
if logged install-gateway "helm install with httpRoute.enabled" helm install "$REL" "$CHART" -n "$GW_APP" \
  -f "$CLUSTER_DIR/gateway-route-values.yaml" -f "$CLUSTER_DIR/gateway-values.yaml" "${APP_IMAGE[@]}" --wait --timeout 180s; then
  pass "helm install with httpRoute.enabled (parent $GW_NS/shared, listener https, host $GW_HOST): Ready in $((SECONDS - t))s"
fi
conds=''
for _ in $(seq 60); do conds=$(gw_route_ok "$GW_APP" "$REL") && break; sleep 0.5; done
if gw_route_ok "$GW_APP" "$REL" >/dev/null; then
  pass "HTTPRoute $GW_APP/$REL on $GW_NS/shared: $conds"
else
  fail "HTTPRoute conditions: $conds (want Accepted=True ResolvedRefs=True)"
  kubectl get httproute -n "$GW_APP" "$REL" -o jsonpath='{.status}'; echo
fi

stage "the contract over TLS through the Gateway"
# gw_call METHOD PATH TOKEN [BODY]: one request through the Gateway; prints
# the status line's code, then the headers the contract names, then the body.
gw_call() {
  local args=(-X "$1" "https://$GW_HOST$2" -D - -o "$CLUSTER_DIR/gw-body")
  [[ -z $3 ]] || args+=(-H "Authorization: Bearer $3")
  [[ -z ${4:-} ]] || args+=(-H 'Content-Type: application/json' -d "$4")
  : >"$CLUSTER_DIR/gw-body"
  { gw_curl -S "${args[@]}" 2>&1 || true; } | tr -d '\r' | grep -i -E '^(HTTP/|link:|www-authenticate:|retry-after:|ratelimit:|ratelimit-policy:|content-type:|curl:)' || true
  echo "body $(head -c 300 "$CLUSTER_DIR/gw-body")"
}
code() { head -n 1 <<<"$1" | awk '{print $2}'; }
header() { { grep -i "^$2:" <<<"$1" || true; } | head -n 1 | cut -d: -f2- | sed "s/^ //"; }
base=$(($(date +%s) % 100000 * 1000 + 500000000))
bad=()
r=$(gw_call POST /plants "$gw_writer" "{\"id\": $base, \"name\": \"through the gateway\"}")
[[ $(code "$r") == 200 && $r == *'"name":"through the gateway"'* ]] || bad+=("create: $r")
r=$(gw_call GET "/plants/$base" "$gw_writer")
[[ $(code "$r") == 200 && $r == *'"name":"through the gateway"'* ]] || bad+=("read: $r")
for i in 1 2; do gw_call POST /plants "$gw_writer" "{\"id\": $((base + i)), \"name\": \"page $i\"}" >/dev/null; done
# The list, one plant a page, its Link followed as given (a relative
# reference) against the URL the client asked: every page through the Gateway.
pages=0 seen=0 next="/plants?limit=1"
while [[ -n $next ]] && ((pages < 1000)); do
  r=$(gw_call GET "$next" "$gw_reader")
  [[ $(code "$r") == 200 ]] || { bad+=("list page $pages ($next): $r"); break; }
  pages=$((pages + 1))
  jq -e --argjson a "$base" --argjson b "$((base + 2))" '.[] | select(.id >= $a and .id <= $b)' "$CLUSTER_DIR/gw-body" >/dev/null 2>&1 && seen=$((seen + 1))
  next=$(header "$r" link | sed -n 's/^<\([^>]*\)>; rel="next"$/\1/p')
  [[ -z $next || $next == /plants\?* ]] || { bad+=("Link not a path of the API as seen through the Gateway: $next"); break; }
done
((seen == 3)) || bad+=("list: $seen of the 3 plants over $pages pages")
r=$(gw_call DELETE "/plants/$base" "$gw_writer")
[[ $(code "$r") == 204 ]] || bad+=("delete: $r")
r=$(gw_call GET "/plants/$base" "$gw_writer")
[[ $(code "$r") == 404 ]] || bad+=("read after delete: $r")
r=$(gw_call POST /plants "" "{\"id\": $((base + 9)), \"name\": \"x\"}")
[[ $(code "$r") == 401 && $(header "$r" www-authenticate) == 'Bearer realm="plantstore"' ]] || bad+=("no token: $r")
r=$(gw_call POST /plants "$gw_reader" "{\"id\": $((base + 9)), \"name\": \"x\"}")
[[ $(code "$r") == 403 && $(header "$r" www-authenticate) == *'error="insufficient_scope", scope="plants:write"'* ]] || bad+=("reader creating: $r")
limited=''
for i in 1 2 3; do limited=$(gw_call GET "/plants/$((base + 1))" "$gw_limited"); done
[[ $(code "$limited") == 429 && $(header "$limited" retry-after) =~ ^[0-9]+$ && $(header "$limited" ratelimit) == *'r=0'* &&
  $(header "$limited" ratelimit-policy) == '"client";q=2;w=60' ]] || bad+=("third request of a 2/min client: $limited")
admin=$(gw_curl -o /dev/null -w '%{http_code}' "https://$GW_HOST/metrics" || true)
[[ $admin == 404 ]] || bad+=("/metrics through the Gateway answered $admin")
figures "gateway-contract pages=$pages plants_seen=$seen limited_retry_after=$(header "$limited" retry-after) admin_metrics=$admin problems=${#bad[@]}"
if ((${#bad[@]} == 0)); then
  pass "through the Gateway over TLS: create 200, read 200, the list over $pages pages by its Link, delete 204 then 404; 401, 403 and 429 with WWW-Authenticate, Retry-After, RateLimit and RateLimit-Policy as the service sends them; /metrics not routed (404)"
else
  fail "the contract through the Gateway"; printf '      %s\n' "${bad[@]}"
fi

stage "one trace from the caller through the Gateway to Redis"
# The caller's span is the root; Traefik's spans (service.name traefik) hang
# under it and the service's server span under one of Traefik's, its Redis
# spans under that: the trace Jaeger shows, looked up until every part is in
# (both export in batches).
GW_JQ='
def spans: [.result.resourceSpans[]? | .resource.attributes as $res | .scopeSpans[]?.spans[]? | . + {service: ([$res[]? | select(.key == "service.name") | .value.stringValue] | first)}];
def server: .kind == 2 or .kind == "SPAN_KIND_SERVER";
def client: .kind == 3 or .kind == "SPAN_KIND_CLIENT";
'
gw_trace=$(hex 16) gw_parent=$(hex 8)
traced_code=$(gw_curl -o /dev/null -w '%{http_code}' -X POST "https://$GW_HOST/plants" -H "Authorization: Bearer $gw_writer" \
  -H 'Content-Type: application/json' -H "traceparent: 00-$gw_trace-$gw_parent-01" -d "{\"id\": $((base + 30)), \"name\": \"traced\"}" || true)
t=$SECONDS shape='{}'
while ((SECONDS - t < 30)); do
  shape=$(jaeger_trace "$gw_trace" | jq -c --arg p "$gw_parent" "$GW_JQ spans as \$all |
    ([\$all[] | select(.service == \"traefik\")]) as \$tr | ([\$tr[].spanId]) as \$trids |
    ([\$all[] | select(.service == \"plantstore\" and server and .name == \"POST /plants\")] | first) as \$srv |
    {traefik: (\$tr | length), traefik_root_under_caller: any(\$tr[]; .parentSpanId == \$p),
     server_under_traefik: (\$srv != null and any(\$trids[]; . == \$srv.parentSpanId)),
     redis_under_server: (\$srv != null and any(\$all[]; client and .parentSpanId == \$srv.spanId)),
     spans: (\$all | length), names: ([\$all[] | \"\\(.service):\\(.name)\"] | unique)}")
  jq -e '.traefik_root_under_caller and .server_under_traefik and .redis_under_server' <<<"$shape" >/dev/null && break
  sleep 1
done
figures "gateway-trace code=$traced_code trace_id=$gw_trace found_s=$((SECONDS - t)) $(jq -r '"spans=\(.spans) traefik_spans=\(.traefik) traefik_under_caller=\(.traefik_root_under_caller) server_under_traefik=\(.server_under_traefik) redis_under_server=\(.redis_under_server)"' <<<"$shape")"
if [[ $traced_code == 200 ]] && jq -e '.traefik_root_under_caller and .server_under_traefik and .redis_under_server' <<<"$shape" >/dev/null; then
  pass "one trace through the Gateway in Jaeger: the caller's span, $(jq .traefik <<<"$shape") Traefik spans under it, the service's POST /plants under Traefik's, its Redis spans under that ($(jq .spans <<<"$shape") spans)"
else
  fail "the trace through the Gateway: create $traced_code; $shape"
fi
# The drain below and the Sentinel scenario's node loss would take Jaeger
# (one replica, in memory) with them: the scenarios that trace after those
# bring it up again.
observability_down wait

stage "a slow store through the Gateway: Redis paused beyond the route's retries"
# CLIENT PAUSE holds every client's commands: to the service, a Redis that
# stopped answering. Each attempt answers 503 with Retry-After 1 once the
# store deadline (1 s) passes; the route's retry sends it again after that
# second, 11 attempts in all (about 21 s), and then the caller gets the
# service's last 503 and its Retry-After, not a timeout of the Gateway's.
kubectl exec -n "$GW_APP" "$REL-redis-0" -c redis -- redis-cli -h 127.0.0.1 client pause 25000 all >/dev/null
sleep 0.2
slow=$(gw_curl --max-time 40 -X POST "https://$GW_HOST/plants" -H "Authorization: Bearer $gw_writer" -H 'Content-Type: application/json' \
  -d "{\"id\": $((base + 20)), \"name\": \"slow\"}" -D - -o /dev/null -w 'time_total %{time_total}\n' | tr -d '\r' || true)
# (An unpause may itself wait for the pause to end.)
timeout 30 kubectl exec -n "$GW_APP" "$REL-redis-0" -c redis -- redis-cli -h 127.0.0.1 client unpause >/dev/null || true
slow_s=$(sed -n 's/^time_total //p' <<<"$slow")
figures "gateway-slow-store code=$(code "$slow") retry_after=$(header "$slow" retry-after) seconds=$slow_s"
if [[ $(code "$slow") == 503 && $(header "$slow" retry-after) =~ ^[0-9]+$ ]] && awk -v s="$slow_s" 'BEGIN {exit !(s >= 14 && s < 24)}'; then
  pass "Redis paused: through the Gateway, after its 11 attempts each 1 s after the last 503, the service's 503 with Retry-After $(header "$slow" retry-after) in ${slow_s}s, not a Gateway timeout"
else
  fail "a slow store through the Gateway: $(head -n 1 <<<"$slow") in ${slow_s}s (want the service's 503 with Retry-After after 14-24 s of attempts)"
fi

joined_all
stage "through the Gateway under $RATE creates/s: the API pods rolled, then a node with an API pod and a Traefik pod drained"
# The node drained holds a Traefik pod and an API pod and not the store (a
# standalone Redis: its move is the Sentinel scenario's); the load runs
# beside the store.
redis_node=$(pod_node "$GW_APP" "$REL-redis-0")
drain_node=''
for n in $(kubectl get pods -n "$GW_NS" -l app.kubernetes.io/name=traefik -o jsonpath='{.items[*].spec.nodeName}'); do
  [[ $n != "$redis_node" ]] && kubectl get pods -n "$GW_APP" -l app.kubernetes.io/component=api --field-selector "spec.nodeName=$n" -o name | grep -q . &&
    { drain_node=$n; break; }
done
gw_access_log_start "$CLUSTER_DIR/logs/traefik-disruption.log"
LOAD_NODE=$redis_node LOAD_GATEWAY="$GW_IP $GW_HOST gateway-ca" load_start "$GW_APP" load-gateway 60
sleep 5
t=$(ms)
logged upgrade-gateway "helm upgrade through the Gateway" \
  helm upgrade "$REL" "$CHART" -n "$GW_APP" --reuse-values --set-string "podAnnotations.rollout=$t" --wait --timeout 120s || true
rolled_s=$((($(ms) - t) / 1000))
sleep 3
# The rollout's pods, the drain's victim among them.
api_logs_start "$GW_APP" "$CLUSTER_DIR/logs/api-disruption.log"
t=$(ms)
drained_s=-1
if [[ -n $drain_node ]] && kubectl drain "$drain_node" --ignore-daemonsets --delete-emptydir-data --force --timeout=120s >"$CLUSTER_DIR/logs/drain-gateway.log" 2>&1; then
  drained_s=$((($(ms) - t) / 1000))
else
  tail -n 5 "$CLUSTER_DIR/logs/drain-gateway.log" 2>/dev/null
fi
[[ -z $drain_node ]] || kubectl uncordon "$drain_node" >/dev/null
t_end=$(ms)
s=$(load_result "$GW_APP" load-gateway) || s='{}'
access=$(gw_access_log "$CLUSTER_DIR/logs/traefik-disruption.log")
pod_logs_stop "$CLUSTER_DIR/logs/api-disruption.log"
# (pods_503: what the API pods answered 503 during the drain, each sent
# again by the route's retry after its Retry-After.)
figures "gateway-disruption rollout_s=$rolled_s drained_node=${drain_node:-none} drain_s=$drained_s $(jq -rs '"retried=\([.[] | select(.RetryAttempts > 0)] | length) answered_5xx=\([.[] | select(.DownstreamStatus >= 500)] | length)"' <<<"$access") pods_503=$(grep -c '"status":503' "$CLUSTER_DIR/logs/api-disruption.log" || true)"
if load_verdict gateway-rollout-drain "$s" && ((drained_s >= 0)) && (($(jq .End <<<"$s") > t_end)); then
  pass "through the Gateway: a rollout of ${rolled_s}s and the drain of $drain_node (an API pod, a Traefik pod) in ${drained_s}s under $RATE creates/s: every create 200, no transport error, every acknowledged plant stored"
else
  fail "rollout and drain through the Gateway (drained_s=$drained_s, node ${drain_node:-none found})"
  echo "Traefik's 5xx answers (OriginStatus 0: none from the pod), then the pods stopped meanwhile:"
  jq -c 'select(.DownstreamStatus >= 500)' <<<"$access" | head -n 10
  echo "the API pods' warnings:"
  api_logs_warnings "$CLUSTER_DIR/logs/api-disruption.log"
  for ns in "$GW_APP" "$GW_NS"; do
    kubectl get events -n "$ns" --field-selector reason=Killing -o custom-columns=AT:.lastTimestamp,POD:.involvedObject.name --no-headers
  done
fi

kubectl delete namespace "$GW_APP" --wait=false >/dev/null
