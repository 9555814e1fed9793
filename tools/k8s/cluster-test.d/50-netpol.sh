# shellcheck shell=bash
# The chart's NetworkPolicies enforced for real: kube-router's network policy
# controller runs on every node (tools/k8s/cluster.sh). On the default values
# a pod of another namespace reaches the API and neither the admin port nor
# Redis. Then, narrowed (networkPolicy.http.from, a monitoring namespace of
# its own, allowExternalEgress false), a pod outside the allowed set is cut
# off from Redis and the API while the API, the helm test pod and an allowed
# client still work, and an API pod reaches Redis and nothing off its egress
# list; with the policies removed the same pod gets through (the checks
# cannot pass on a cluster that enforces nothing).

NP_NS=np NP_OTHER=np-other NP_MON=np-monitor
NP_LABEL=plantstore.test/api-client
np_redis=$REL-redis

# np_start NS NAME LABELS SCRIPT [SECRET]: a client pod (client_start)
# with LABELS (a YAML map) that runs SCRIPT once np_go lets it. np_go NS
# NAME: wait until kube-router has programmed the pod (its chains name it;
# the ipsets of the policies that select it are written in the same sync),
# then let it run: a pod's first packets may leave before the engine knows
# it, and a denial seen then would prove nothing. client_log NS NAME: wait
# for it and print its log.
np_start() {
  client_start "$1" "$2" "while [ ! -e /tmp/go ]; do sleep 0.2; done
$NP_REACH$4" "${5:-}" "$3"
}
NP_SYNC_MS=0
np_go() {
  local ns=$1 name=$2 t0 i netns
  kubectl wait -n "$ns" --for=jsonpath='{.status.phase}'=Running "pod/$name" --timeout=60s >/dev/null
  netns=$(node_netns "$(pod_node "$ns" "$name")")
  t0=$(ms)
  for ((i = 0; i < 120; i++)); do
    grep -q "POD name:$name namespace: $ns " <<<"$(nsenter --net="/run/netns/$netns" iptables-save -t filter)" && break
    sleep 0.25
  done
  (($(ms) - t0 > NP_SYNC_MS)) && NP_SYNC_MS=$(($(ms) - t0))
  kubectl exec -n "$ns" "$name" -- sh -c ': >/tmp/go'
}
# reach URL: what a TCP connection to URL's port gets: the HTTP status when
# it speaks HTTP, "open" when something answered that does not (Redis),
# "timeout" (dropped) or "refused" (rejected).
NP_REACH='reach() {
  code=$(curl -s -o /dev/null --connect-timeout 2 --max-time 4 -w "%{http_code}" "$@"); rc=$?
  case $rc in
    0) echo "$code" ;;
    28) if [ "$code" = 000 ]; then echo timeout; else echo open; fi ;;
    7) echo refused ;;
    6) echo no-dns ;;
    *) echo open ;;
  esac
}
'
# blocked WORD: the answer of a connection the policies refuse.
blocked() { [[ $1 == timeout || $1 == refused ]]; }
# kv KEY TEXT: the value of KEY=VALUE in TEXT.
kv() { grep -oE "(^| )$1=[^ ]*" <<<"$2" | head -n 1 | cut -d= -f2; }

stage "NetworkPolicy enforced by kube-router, on the default values: another namespace reaches the API, not the admin port nor Redis"
restricted_ns "$NP_NS"
restricted_ns "$NP_OTHER"
restricted_ns "$NP_MON"
t=$SECONDS
if logged install-netpol "helm install on the default values" helm install "$REL" "$CHART" -n "$NP_NS" "${APP_IMAGE[@]}" --wait --timeout 240s; then
  pass "helm install on the default values: $(kubectl get networkpolicy -n "$NP_NS" --no-headers | wc -l) NetworkPolicies; every pod Ready in $((SECONDS - t))s (the kubelet's probes pass them)"
else
  kubectl get pods -n "$NP_NS" -o wide
fi
np_install_s=$((SECONDS - t))
api_ip=$(kubectl get pods -n "$NP_NS" -l app.kubernetes.io/component=api -o jsonpath='{.items[0].status.podIP}')
redis_ip=$(kubectl get pods -n "$NP_NS" -l app.kubernetes.io/component=redis -o jsonpath='{.items[0].status.podIP}')
svc=$REL.$NP_NS.svc.cluster.local rsvc=$np_redis.$NP_NS.svc.cluster.local
# The probes of a pod: through the Services (kube-proxy's DNAT, then routed
# back to the bridge) and to the pods' addresses (switched by the bridge).
fields='api=$(reach http://'"$svc"':8080/plants/1) api_pod=$(reach http://'"$api_ip"':8080/plants/1) redis=$(reach http://'"$rsvc"':6379/) redis_pod=$(reach http://'"$redis_ip"':6379/) metrics=$(reach http://'"$api_ip"':9090/metrics)'
probes="echo \"$fields\""
np_start "$NP_OTHER" np-default-other "{app.kubernetes.io/name: scenario-client}" "$probes"
np_go "$NP_OTHER" np-default-other
default_other=$(client_log "$NP_OTHER" np-default-other)
echo "another namespace ($NP_OTHER), default values: $default_other"
if [[ $(kv api "$default_other") =~ ^[0-9]{3}$ && $(kv api_pod "$default_other") =~ ^[0-9]{3}$ ]] &&
  blocked "$(kv metrics "$default_other")" && blocked "$(kv redis "$default_other")" && blocked "$(kv redis_pod "$default_other")"; then
  pass "default values: a pod of another namespace reaches the API (Service and pod: $(kv api "$default_other")), and not the admin port ($(kv metrics "$default_other")) nor Redis ($(kv redis "$default_other"))"
else
  fail "default values, from another namespace: want the API answering, the admin port and Redis cut off: $default_other"
fi

stage "narrowed by values: only labelled clients on the API, a monitoring namespace of its own, egress closed"
# Only pods labelled as API clients in the release's namespace may call the
# API (the chart adds its helm test pod); its metrics port only from the
# np-monitor namespace; Redis only from the API pods; the API pods connect
# to nothing but DNS and Redis.
cat >"$CLUSTER_DIR/netpol-values.yaml" <<EOF
networkPolicy:
  allowExternalEgress: false
  http:
    from:
      - podSelector:
          matchLabels: {$NP_LABEL: "true"}
  metrics:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: $NP_MON}
EOF
t=$SECONDS
if logged upgrade-netpol-narrow "helm upgrade to the narrowed policies" \
  helm upgrade "$REL" "$CHART" -n "$NP_NS" --reuse-values -f "$CLUSTER_DIR/netpol-values.yaml" --wait --timeout 240s; then
  pass "helm upgrade to the narrowed policies in $((SECONDS - t))s"
fi

if helm test "$REL" -n "$NP_NS" --logs --timeout 120s >"$CLUSTER_DIR/logs/test-netpol.log" 2>&1 && grep -q '^PASS' "$CLUSTER_DIR/logs/test-netpol.log"; then
  np_helm_test=pass
  pass "helm test under the policies: the test pod reaches the API, the API reaches Redis (create 200)"
else
  np_helm_test=fail
  fail "helm test under the policies"; tail -n 20 "$CLUSTER_DIR/logs/test-netpol.log"
fi

stage "who reaches the API (8080), its metrics port (9090) and Redis (6379)"
create='token=$(grep -v -e "^#" -e "^sha256:" -e "^$" /etc/tokens/tokens | head -n 1 | tr -d "[:space:]")
id=$(( $(date +%s) % 1000000000 * 1000 + $(od -An -N2 -tu2 /dev/urandom) % 1000 ))
printf "create=%s " "$(curl -s -o /dev/null --connect-timeout 2 --max-time 5 -w "%{http_code}" -X POST http://'"$REL"':8080/plants -H "Authorization: Bearer $token" -H "Content-Type: application/json" -d "{\"id\": $id, \"name\": \"netpol\"}")"
'
t=$SECONDS
np_start "$NP_NS" np-allowed "{$NP_LABEL: \"true\"}" "$create$probes" "$REL-tokens"
np_start "$NP_NS" np-denied "{app.kubernetes.io/name: scenario-client}" "$probes"
np_start "$NP_OTHER" np-other-ns "{$NP_LABEL: \"true\"}" "$probes"
np_start "$NP_MON" np-monitor "{app.kubernetes.io/name: scenario-client}" "$probes"
np_go "$NP_NS" np-allowed; np_go "$NP_NS" np-denied; np_go "$NP_OTHER" np-other-ns; np_go "$NP_MON" np-monitor
allowed=$(client_log "$NP_NS" np-allowed) denied=$(client_log "$NP_NS" np-denied)
other=$(client_log "$NP_OTHER" np-other-ns) monitor=$(client_log "$NP_MON" np-monitor)
printf 'allowed client  (%s, labelled): %s\ndenied client   (%s, unlabelled): %s\nother namespace (%s, labelled): %s\nmonitoring ns   (%s): %s\n' \
  "$NP_NS" "$allowed" "$NP_NS" "$denied" "$NP_OTHER" "$other" "$NP_MON" "$monitor"
np_probe_s=$((SECONDS - t))

if [[ $(kv create "$allowed") == 200 && $(kv api "$allowed") =~ ^[0-9]{3}$ && $(kv api_pod "$allowed") =~ ^[0-9]{3}$ ]]; then
  pass "an allowed client (labelled, same namespace) reaches the API: create 200 through the Service, the pod's port answers"
else
  fail "allowed client: want create=200 and the API answering: $allowed"
fi
ok=1
for k in redis redis_pod metrics; do blocked "$(kv $k "$allowed")" || ok=0; done
for k in api api_pod redis redis_pod metrics; do blocked "$(kv $k "$denied")" && blocked "$(kv $k "$other")" || ok=0; done
if ((ok)); then
  pass "cut off: Redis (Service and pod) from every client; the API (Service and pod) from an unlabelled pod and from a labelled pod of another namespace; the metrics port from all of them"
else
  fail "a pod outside the allowed set got through"
fi
if [[ $(kv metrics "$monitor") == 200 ]] && blocked "$(kv api "$monitor")" && blocked "$(kv redis "$monitor")"; then
  pass "the monitoring namespace reaches the metrics port (200) and nothing else"
else
  fail "monitoring namespace: want metrics=200, API and Redis cut off: $monitor"
fi
# The API pods' egress (DNS, Redis): from an ephemeral container in an API
# pod's network namespace (the image has no shell), Redis through its Service
# and, not in the list, the API server at its own address (the control
# plane's, another host as on any cluster). DNS is not a proof of the
# chart's DNS rule here: this cluster's DNS runs on each node, on an address
# of the Service range, which kube-router lets every pod reach.
np_debug() {
  local pod=$1 name=$2
  kubectl debug -n "$NP_NS" "$pod" -c "$name" --image=plantstore.test/client:1 --image-pull-policy=Never \
    --profile=restricted -- sh -c "$NP_REACH"'echo "redis=$(reach http://'"$rsvc"':6379/) apiserver=$(reach http://'"$apiserver"'/)"' >/dev/null 2>&1
  for _ in $(seq 60); do
    [[ -n $(kubectl get pod -n "$NP_NS" "$pod" -o jsonpath="{.status.ephemeralContainerStatuses[?(@.name==\"$name\")].state.terminated}") ]] && break
    sleep 0.5
  done
  kubectl logs -n "$NP_NS" "$pod" -c "$name"
}
# The API server's address and port, as the kubernetes Service's endpoint names them.
apiserver=$(kubectl get endpoints kubernetes -n default -o jsonpath='{.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}')
api_pod=$(live_api_pod "$NP_NS")
api_egress=$(np_debug "$api_pod" np-egress)
echo "from an API pod: $api_egress"
if [[ $(kv redis "$api_egress") == open ]] && blocked "$(kv apiserver "$api_egress")"; then
  pass "an API pod reaches Redis and nothing outside its egress list (the API server at $apiserver: $(kv apiserver "$api_egress"))"
else
  fail "API pod egress: want Redis open and the API server cut off: $api_egress"
fi
# The chart's Redis connects nowhere (egress: []): from inside its pod.
# With redis-cli, the one client in that image: "Could not connect" when
# refused, nothing when it timed out, and when the API answered "Protocol
# error" (HTTP, not Redis, came back).
redis_out() { kubectl exec -n "$NP_NS" "$np_redis-0" -c redis -- timeout 5 redis-cli -h "$api_ip" -p 8080 PING 2>&1 | tr '\n' ' ' || true; }
redis_connected() { grep -q 'Protocol error' <<<"$1"; }
redis_out=$(redis_out)
if ! redis_connected "$redis_out"; then
  redis_egress=blocked
  pass "the Redis pod cannot open a connection out (to the API pod): redis-cli: ${redis_out:-timed out}"
else
  redis_egress=open
  fail "the Redis pod connected out: $redis_out"
fi

stage "the policies removed: the same pods get through"
t=$(ms)
logged upgrade-netpol "helm upgrade networkPolicy.enabled=false" \
  helm upgrade "$REL" "$CHART" -n "$NP_NS" --reuse-values --set networkPolicy.enabled=false --wait --timeout 120s || true
# kube-router resyncs on the deletion: retry for a while, not forever.
np_start "$NP_NS" np-denied-open "{app.kubernetes.io/name: scenario-client}" '
for i in $(seq 20); do r=$(reach http://'"$rsvc"':6379/); [ "$r" = open ] && break; sleep 1; done
echo "tries=$i '"$fields\""
np_go "$NP_NS" np-denied-open
open=$(client_log "$NP_NS" np-denied-open)
open_ms=$(($(ms) - t))
echo "denied client, policies removed: $open"
redis_after=$(redis_out)
api_pod=$(live_api_pod "$NP_NS")
api_egress_after=$(np_debug "$api_pod" np-egress-open)
echo "from the Redis pod: ${redis_after:-killed by timeout}; from an API pod: $api_egress_after"
if [[ $(kv api "$open") =~ ^[0-9]{3}$ && $(kv api_pod "$open") =~ ^[0-9]{3}$ && $(kv redis "$open") == open && $(kv redis_pod "$open") == open ]] &&
  redis_connected "$redis_after" && [[ $(kv apiserver "$api_egress_after") =~ ^[0-9]{3}$ ]]; then
  pass "without the policies the unlabelled pod reaches the API ($(kv api "$open")) and Redis, Redis connects out and an API pod reaches the API server: the denials above were the policies'"
else
  fail "without the policies the denied pod still cannot get through (the test would pass vacuously): $open; Redis out: $redis_after; API pod: $api_egress_after"
fi

figures "netpol engine=kube-router-$(awk '$1 == "github.com/cloudnativelabs/kube-router/v2" {print $2}' "$TOOLS_MOD/kube-router/go.mod") install_s=$np_install_s helm_test=$np_helm_test" \
  "allowed:create=$(kv create "$allowed"),api=$(kv api "$allowed"),redis=$(kv redis "$allowed"),metrics=$(kv metrics "$allowed")" \
  "denied:api=$(kv api "$denied"),api_pod=$(kv api_pod "$denied"),redis=$(kv redis "$denied"),redis_pod=$(kv redis_pod "$denied"),metrics=$(kv metrics "$denied")" \
  "other_ns:api=$(kv api "$other"),redis=$(kv redis "$other")" \
  "default_values_other_ns:api=$(kv api "$default_other"),metrics=$(kv metrics "$default_other"),redis=$(kv redis "$default_other")" \
  "monitor_ns:metrics=$(kv metrics "$monitor"),api=$(kv api "$monitor"),redis=$(kv redis "$monitor")" \
  "api_pod_egress:redis=$(kv redis "$api_egress"),apiserver=$(kv apiserver "$api_egress") redis_egress=$redis_egress engine_sync_ms_max=$NP_SYNC_MS probes_s=$np_probe_s" \
  "removed:api=$(kv api "$open"),api_pod_to_apiserver=$(kv apiserver "$api_egress_after"),redis=$(kv redis "$open"),redis_pod=$(kv redis_pod "$open"),tries=$(kv tries "$open"),open_after_ms=$open_ms"
kubectl delete namespace "$NP_NS" "$NP_OTHER" "$NP_MON" --wait=false >/dev/null
