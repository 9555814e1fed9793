# shellcheck shell=bash
# The chart with default values: make deploy and helm test in a namespace
# that enforces restricted, requests from a pod, and the release under load
# through a rollout, pod disruptions and a Redis restart.

stage "install: make deploy into a namespace enforcing restricted"
restricted_ns "$NS"
t=$SECONDS
if make -C "$REPO" --no-print-directory deploy HELM=helm NAMESPACE="$NS" IMAGE_REPO="$IMAGE_REPO" IMAGE_TAG="$TAG" \
  HELM_FLAGS="${LOCAL_IMAGES[*]} --timeout 240s" >"$CLUSTER_DIR/logs/deploy.log" 2>&1; then
  if grep -qi 'would violate PodSecurity\|forbidden' "$CLUSTER_DIR/logs/deploy.log"; then
    fail "make deploy: Pod Security warnings"; grep -i 'PodSecurity' "$CLUSTER_DIR/logs/deploy.log" | head -5
  elif grep -q '^PASS' "$CLUSTER_DIR/logs/deploy.log"; then
    pass "make deploy (helm upgrade --install --wait, helm test --logs) in $((SECONDS - t))s; helm test passed and its log was read"
  else
    fail "make deploy: exit 0 but helm test's PASS not in its logs"; tail -n 20 "$CLUSTER_DIR/logs/deploy.log"
  fi
else
  fail "make deploy"; tail -n 40 "$CLUSTER_DIR/logs/deploy.log"
fi
figures "install seconds=$((SECONDS - t)) pods=$(kubectl get pods -n "$NS" --no-headers | grep -c Running) namespace_enforces=restricted"
kubectl get pods -n "$NS" -o wide

stage "from a pod: create through the Service name; no token and a wrong token are refused"
out=$(client "$NS" curl-checks '
set -u
token=$(grep -v -e "^#" -e "^sha256:" -e "^$" /etc/tokens/tokens | head -n 1 | tr -d "[:space:]")
id=$(( $(date +%s) * 1000 + $(od -An -N2 -tu2 /dev/urandom) % 1000 ))
c1=$(curl -s -o /dev/null -w "%{http_code}" -X POST http://'"$REL"':8080/plants -H "Authorization: Bearer $token" -H "Content-Type: application/json" -d "{\"id\": $id, \"name\": \"from-a-pod\"}")
c2=$(curl -s -o /dev/null -w "%{http_code}" -X POST http://'"$REL"':8080/plants -H "Content-Type: application/json" -d "{\"id\": $id, \"name\": \"x\"}")
c3=$(curl -s -D - -o /dev/null -X POST http://'"$REL"':8080/plants -H "Authorization: Bearer wrong-token" -H "Content-Type: application/json" -d "{\"id\": $id, \"name\": \"x\"}" | tr -d "\r" | grep -i -e "^HTTP/" -e "^www-authenticate" | tr "\n" " ")
echo "create=$c1 no_token=$c2 wrong_token=[$c3]"
' "$REL-tokens")
echo "$out"
figures "pod-checks $out"
if grep -q 'create=200 no_token=401 wrong_token=\[HTTP/1.1 401 Unauthorized .*error="invalid_token"' <<<"$out"; then
  pass "create through the Service name 200; no token 401; wrong token 401 with error=\"invalid_token\""
else
  fail "from a pod: want create=200 no_token=401 wrong_token=401"
fi

stage "helm upgrade rolling the API pods, then API pods deleted and evicted through the PDB, under one open-loop load of $RATE creates/s"
# One load over both (a rollout, then a deletion and an eviction), 60 s at
# most, ended 3 s after the last of them.
load_start "$NS" load-upgrade 60
sleep 5
t=$(ms)
logged upgrade "helm upgrade" helm upgrade "$REL" "$CHART" -n "$NS" --reuse-values --set-string "podAnnotations.rollout=$t" --wait --timeout 120s || true
t2=$(ms)
figures "upgrade rollout_seconds=$(((t2 - t) / 1000))"

victim=$(live_api_pod "$NS")
td=$(ms)
kubectl delete pod -n "$NS" "$victim" >/dev/null
# Replaced when as many live pods are Ready as the Deployment wants (a
# label-wide kubectl wait fails on a pod that goes away while it waits).
want=$(kubectl get deployment -n "$NS" "$REL" -o jsonpath='{.spec.replicas}')
for _ in $(seq 180); do
  ready=$(kubectl get pods -n "$NS" -l app.kubernetes.io/component=api -o json |
    jq '[.items[] | select(.metadata.deletionTimestamp == null and any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length')
  ((ready >= want)) && break
  sleep 0.5
done
t_del=$(ms)
victim=$(live_api_pod "$NS")
evicted=0
for _ in $(seq 60); do
  # The PDB (minAvailable 1) refuses while a replacement is not Ready yet: 429.
  if kubectl create --raw "/api/v1/namespaces/$NS/pods/$victim/eviction" -f - >/dev/null 2>&1 <<EOF
{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "$victim", "namespace": "$NS"}}
EOF
  then evicted=1; break; fi
  sleep 1
done
kubectl rollout status -n "$NS" "deployment/$REL" --timeout=90s >/dev/null
t_ev=$(ms)
figures "pod-disruption delete_replaced_seconds=$(((t_del - td) / 1000)) evicted=$evicted"
sleep 3
load_stop "$NS" load-upgrade
s=$(load_result "$NS" load-upgrade) || s='{}'
if load_verdict upgrade-and-disruption "$s" && ((evicted)); then
  if covered "$s" "$t" "$t_ev"; then
    pass "rollout of $(((t2 - t) / 1000))s, a pod deleted (replaced in $(((t_del - td) / 1000))s) and a pod evicted through the PDB, under load: every create 200, no transport error, every acknowledged plant stored"
  else
    fail "the load did not cover the rollout, the deletion and the eviction ($t..$t_ev vs $(jq -c '[.Start,.End]' <<<"$s"))"
  fi
else
  fail "helm upgrade, pod deletion and eviction under load (evicted=$evicted): failed requests"
fi

stage "the Redis pod deleted under load, Redis held down longer than the readiness window"
# Scaling the StatefulSet to 0 deletes the pod and keeps it away for HOLD
# seconds, longer than the API's readiness window (periodSeconds 5 x
# failureThreshold 2): pods whose readiness followed the shared Redis would
# all leave the Service, and clients would get connection errors.
HOLD=20
redis_sts=$REL-redis
ready_api() { kubectl get endpointslices -n "$NS" -l "kubernetes.io/service-name=$REL" -o json | jq '[.items[].endpoints[]? | select(.conditions.ready)] | length'; }
api_ready_before=$(ready_api)
load_start "$NS" load-redis 45
sleep 5
t=$(ms)
kubectl scale statefulset -n "$NS" "$redis_sts" --replicas=0 >/dev/null
# Sample the API Service's ready endpoints through the outage: they must not drop.
min_ready=$api_ready_before
sample() { local n; n=$(ready_api); ((n < min_ready)) && min_ready=$n; return 0; }
while (($(ms) - t < HOLD * 1000)); do sample; sleep 0.5; done
kubectl scale statefulset -n "$NS" "$redis_sts" --replicas=1 >/dev/null
t_up=$(ms)
until kubectl get pod -n "$NS" "$redis_sts-0" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True; do
  sample
  (($(ms) - t_up < 120000)) || { fail "Redis not Ready again within 120s"; break; }
  sleep 0.5
done
t_ready=$(ms)
s=$(load_result "$NS" load-redis) || s='{}'
recovered_ms=$(($(jq .FirstOKAfter503 <<<"$s") - t_ready))
figures "redis-outage held_s=$HOLD redis_ready_after_scale_up_ms=$((t_ready - t_up)) unavailable_503=$(jq .Unavailable <<<"$s") without_retry_after=$(jq .NoRetryAfter <<<"$s") first_ok_after_ready_ms=$recovered_ms api_ready_endpoints_min=$min_ready of=$api_ready_before"
if load_verdict redis-outage "$s" 1 && ((min_ready == api_ready_before)) && (($(jq '.FirstOKAfter503 // 0' <<<"$s") > 0 && recovered_ms <= 10000)); then
  pass "Redis down ${HOLD}s under load: 0 acknowledged plants lost, every request in the gap 503 + Retry-After, no connection error, API pods stayed Ready, creates back ${recovered_ms}ms after Redis Ready"
else
  fail "Redis down under load (API ready endpoints min $min_ready of $api_ready_before, first 200 ${recovered_ms}ms after Redis Ready)"
fi

stage "a new Redis image (plantstore.test/redis:7.0 as :7.0-roll) under $RATE creates/s: the standalone server restarts by itself"
# The same image under another tag changes the pod template: the upgrade
# alone restarts the one server (redis.updateStrategy RollingUpdate). Creates
# answer 503 with Retry-After while it is away; nothing acknowledged is lost.
node_image_tag plantstore.test/redis:7.0 plantstore.test/redis:7.0-roll
redis_uid_before=$(kubectl get pod -n "$NS" "$redis_sts-0" -o jsonpath='{.metadata.uid}')
load_start "$NS" load-redis-roll 40
sleep 5
t=$(ms)
helm upgrade "$REL" "$CHART" -n "$NS" --reset-then-reuse-values --set-string redis.image.tag=7.0-roll --wait --timeout 180s \
  >"$CLUSTER_DIR/logs/redis-roll.log" 2>&1 && kubectl rollout status -n "$NS" "statefulset/$redis_sts" --timeout=120s >/dev/null ||
  { fail "helm upgrade with a new Redis image"; tail -n 10 "$CLUSTER_DIR/logs/redis-roll.log"; }
rolled_ms=$(($(ms) - t))
# 5 s more (a 200 after the last 503), then the load's check.
sleep 5
load_stop "$NS" load-redis-roll
s=$(load_result "$NS" load-redis-roll) || s='{}'
redis_after=$(kubectl get pod -n "$NS" "$redis_sts-0" -o jsonpath='{.metadata.uid} {.spec.containers[?(@.name=="redis")].image}')
window_ms=$(window_503_ms "$s")
figures "redis-roll-standalone rolled_ms=$rolled_ms image=${redis_after#* } unavailable_503=$(jq .Unavailable <<<"$s") without_retry_after=$(jq .NoRetryAfter <<<"$s") window_503_ms=$window_ms"
if load_verdict redis-roll-standalone "$s" 1 && covered "$s" "$t" "$((t + rolled_ms))" && [[ ${redis_after%% *} != "$redis_uid_before" && ${redis_after#* } == plantstore.test/redis:7.0-roll ]] && ((window_ms <= REDIS_RESTART_503_MS)); then
  pass "a new Redis image applied by the upgrade alone (${rolled_ms}ms): the server restarted, $(jq .Unavailable <<<"$s") creates answered 503 with Retry-After over ${window_ms}ms (bound ${REDIS_RESTART_503_MS}ms), 0 acknowledged plants lost"
else
  fail "the standalone Redis roll: pod [$redis_after], 503s over ${window_ms}ms (bound ${REDIS_RESTART_503_MS}ms), or a load that did not cover the ${rolled_ms}ms roll"
fi
# Gone once proven, as every scenario's namespaces are: later scenarios'
# timings share the nodes with none of its pods and probes.
kubectl delete namespace "$NS" --wait=false >/dev/null
