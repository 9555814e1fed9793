# shellcheck shell=bash
# The chart's highly available store, one switch (ci/sentinel-values.yaml:
# redis.architecture sentinel, NetworkPolicies on), on three nodes in three
# zones, reached as a user with plants already stored reaches it: installed
# standalone, then helm upgrade under load (every plant kept). Three Redis
# servers, each pod with a Sentinel, three API pods, all spread one a zone;
# the API following the Sentinels and answering a create once a replica
# holds it; a webhook subscriber that remembers every plant.created. Then,
# under the open-loop create load, the node of the Redis master is drained
# (kubectl drain, through the PDBs), and later the node of the next master
# dies, twice (cluster.sh node-kill: its processes and containers killed,
# its link down): under a plain load straight to the Service, then under
# loads through the Gateway (lib/gateway.sh; see the node loss's stages
# below). Each time: the Sentinels promote a replica, every acknowledged
# plant is read back and its plant.created arrived, every failed request is
# a 503 with Retry-After or (the dead node's pods, until the control plane
# sees the node gone) no answer, and the lost server comes back as a
# replica that refuses writes. Before the upgrade the standalone Redis's
# zone, and after the roll the master's zone, a replica's and (one way) a
# client's zone from the master's, are cut off by a network partition while
# every zone's clients record their histories (lib/partition.sh), which must
# stay linearizable.
# The load and the subscriber run on a node neither disruption takes.

# shellcheck source=/dev/null
source "$TOOLS_MOD/cluster-test.d/lib/gateway.sh"
SN_NS=sentinel
# The load across the move from standalone: past the upgrade (30 s) and the
# first pod's return with the failover it may cause (10 s).
SN_UPGRADE_RATE=100 SN_UPGRADE_LOAD_S=50
# redis_in NS POD ARGS...: redis-cli in the pod's Redis container (its
# REDISCLI_AUTH holds the password); sentinel_in the same on the Sentinel.
# Both print nothing (and succeed) when the pod does not answer.
redis_in() { local ns=$1 pod=$2; shift 2; { timeout 10 kubectl exec -n "$ns" "$pod" -c redis -- redis-cli -h 127.0.0.1 "$@" 2>/dev/null || true; } | tr -d '\r'; }
sentinel_in() { local ns=$1 pod=$2; shift 2; { timeout 10 kubectl exec -n "$ns" "$pod" -c sentinel -- redis-cli -h 127.0.0.1 -p 26379 "$@" 2>/dev/null || true; } | tr -d '\r'; }
redis_pods() { kubectl get pods -n "$1" -l app.kubernetes.io/component=redis -o jsonpath='{.items[*].metadata.name}'; }
# roles NS: "pod=role" of each Redis pod, a line each.
roles() {
  local p
  for p in $(redis_pods "$1"); do
    echo "$p=$(redis_in "$1" "$p" info replication | sed -n 's/^role://p')"
  done
}
# master_pod NS [NOT]: the pod the first Sentinel that answers (other than
# NOT's) names master.
master_pod() {
  local p m
  for p in $(redis_pods "$1"); do
    [[ $p == "${2:-}" ]] && continue
    m=$(sentinel_in "$1" "$p" sentinel get-master-addr-by-name plantstore | head -n 1)
    [[ -n $m ]] && { echo "${m%%.*}"; return; }
  done
}
# wait_master NS OLD SECONDS [ASK_NOT]: wait until a Sentinel names a master
# other than OLD; print it.
wait_master() {
  local t m
  t=$(ms)
  while (($(ms) - t < $3 * 1000)); do
    m=$(master_pod "$1" "${4:-}")
    [[ -n $m && $m != "$2" ]] && { echo "$m"; return 0; }
    sleep 0.5
  done
  return 1
}
# master_off NS MASTER NODE: the master, moved off NODE first if it is there
# (the load's node must live), as an operator would before maintenance:
# the chart's own handover (switchover.sh, what a master's preStop runs),
# then until the set has settled (so that no 503 of the move falls into the
# next measurement).
master_off() {
  local m=$2
  if [[ $(pod_node "$1" "$m") == "$3" ]]; then
    timeout 60 kubectl exec -n "$1" "$m" -c redis -- sh -c "sh /etc/redis/switchover.sh \"\$POD_NAME.$REL-redis.$1.svc\"" >&2 || true
    m=$(wait_master "$1" "$m" 60) || m=$2
    wait_settled "$1" 60 || true
  fi
  echo "$m"
}
# wait_settled NS SECONDS: until the master the Sentinels name has both
# replicas in sync and no Sentinel is still completing a failover (a
# handover asked meanwhile would be refused, INPROG).
wait_settled() {
  local t m p
  t=$(ms)
  while (($(ms) - t < $2 * 1000)); do
    m=$(master_pod "$1")
    [[ -n $m && $(redis_in "$1" "$m" info replication | grep -c '^slave[0-9]*:.*state=online') == 2 ]] &&
      ! for p in $(redis_pods "$1"); do sentinel_in "$1" "$p" sentinel master plantstore | sed -n '/^flags$/{n;p}'; done | grep -q failover &&
      return 0
    sleep 1
  done
  return 1
}
# subscriber_off NODE: a node other than NODE, where the load and the
# webhook subscriber then run (the subscriber moved there).
subscriber_off() {
  local n
  n=$(kubectl get nodes -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | grep -vx "$1" | tail -n 1)
  receiver_manifest "$n" | kubectl apply -n "$SN_NS" -f - >/dev/null
  kubectl rollout status -n "$SN_NS" deployment/webhook-receiver --timeout=60s >/dev/null
  echo "$n"
}
zone_of() { kubectl get node "$1" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}'; }
# zones NS SELECTOR: the zones of the pods SELECTOR picks, sorted, one a word.
zones() {
  local n
  for n in $(kubectl get pods -n "$1" -l "$2" --field-selector=status.phase=Running -o jsonpath='{.items[*].spec.nodeName}'); do
    zone_of "$n"
    echo
  done | sort | tr '\n' ' ' | sed 's/ $//'
}
# ready_again NS POD SECONDS: wait until POD (a new one, after OLD_UID) is
# Ready; print how long it took.
ready_again() {
  local t
  t=$(ms)
  while (($(ms) - t < $3 * 1000)); do
    [[ $(kubectl get pod -n "$1" "$2" -o jsonpath='{.metadata.uid} {.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == *" True" &&
      $(kubectl get pod -n "$1" "$2" -o jsonpath='{.metadata.uid}') != "${OLD_UID:-}" ]] && { echo $(($(ms) - t)); return 0; }
    sleep 0.5
  done
  echo $(($(ms) - t))
  return 1
}
# events_ok SUMMARY: the subscriber got every acknowledged plant's
# plant.created (k8s-load -events-url); events_figures SUMMARY says how many.
events_ok() { local s=$1; jq -e '.EventsChecked > 0 and .EventsChecked == .Acknowledged and .EventsMissing == 0 and .EventsError == ""' <<<"$s" >/dev/null; }
events_figures() { local s=$1; jq -r '"events_checked=\(.EventsChecked) events_missing=\(.EventsMissing)\(if .EventsError != "" then " events_error=" + (.EventsError | @json) else "" end)"' <<<"$s"; }

stage "ci/sentinel-values.yaml on $(kubectl get nodes --no-headers | wc -l) nodes, installed standalone first: three API pods, NetworkPolicies on"
restricted_ns "$SN_NS"
logged gateway-up-sentinel "the Gateway" gw_up || true
gw_attach "$SN_NS" "$CLUSTER_DIR/sentinel-route-values.yaml"
sn_whsec="whsec_$(head -c 24 /dev/urandom | base64)"
# Two clients: the load's (the first raw token, which k8s-load takes) and
# one of 2 requests a minute, whose budget lives in Redis.
sn_load_token=$(hex 16) sn_limited_token=$(hex 16)
cat >"$CLUSTER_DIR/sentinel-scenario-values.yaml" <<EOF
replicaCount: 3
auth:
  tokens: ["$sn_load_token name=load", "$sn_limited_token name=limited rate=2/m burst=2"]
webhooks:
  subscribers: ["http://webhook-receiver.$SN_NS.svc:8080/hooks/plantstore $sn_whsec"]
  allowCIDRs: [10.96.0.0/16]
networkPolicy:
  extraEgress:
    - to: [{podSelector: {matchLabels: {app.kubernetes.io/name: webhook-receiver}}}]
      ports: [{port: 8080, protocol: TCP}]
EOF
sn_values=(-f "$CHART/ci/sentinel-values.yaml" -f "$CLUSTER_DIR/sentinel-scenario-values.yaml" -f "$CLUSTER_DIR/sentinel-route-values.yaml" "${APP_IMAGE[@]}")
# The set starts as most do: a standalone Redis holding the plants, then
# one helm upgrade to the Sentinel set under load (reliability.md, "From
# standalone"). The load and the subscriber run on a node the first Redis
# pod is not on.
t=$SECONDS
if logged install-standalone "helm install, standalone" \
  helm install "$REL" "$CHART" -n "$SN_NS" "${sn_values[@]}" --set redis.architecture=standalone --wait --timeout 300s; then
  pass "helm install -f ci/sentinel-values.yaml --set redis.architecture=standalone (replicaCount 3, a webhook subscriber): Ready in $((SECONDS - t))s"
else
  kubectl get pods -n "$SN_NS" -o wide
fi
safe=$(subscriber_off "$(pod_node "$SN_NS" "$REL-redis-0")")

# shellcheck source=/dev/null
source "$TOOLS_MOD/cluster-test.d/lib/partition.sh"
stage "the standalone Redis's zone cut off (20 s), then (CLUSTER_FULL=1) a client's zone from it one way (15 s), under recorded histories"
# One copy of every plant: the cut-off zone's API pod serves its own zone's
# clients from it, every other zone's creates and reads answer 503 until the
# heal (one way: only the cut-off client zone's); the histories stay
# linearizable.
st_settle() {
  kubectl wait --for=condition=Ready nodes --all --timeout=120s >/dev/null || echo "a node not Ready 120s after the heal"
  kubectl wait -n "$SN_NS" --for=condition=Ready pods -l "app.kubernetes.io/instance=$REL" --timeout=120s >/dev/null || echo "a pod not Ready 120s after the heal"
}
rzone=$(zone_of "$(pod_node "$SN_NS" "$REL-redis-0")")
partition_scenario "$SN_NS" standalone 20 "$rzone"
st_settle
if ((FULL)); then # the one-way cut of the Sentinel set below covers the same path in CI
  czone=$(kubectl get nodes -o jsonpath='{.items[*].metadata.labels.topology\.kubernetes\.io/zone}' | tr ' ' '\n' | grep -vx -e "$rzone" -e "$(zone_of "$safe")" | head -n 1)
  partition_scenario "$SN_NS" standalone-one-way 15 --one-way "$czone" -- "$rzone"
  st_settle
fi

stage "helm upgrade from standalone to the Sentinel set under $SN_UPGRADE_RATE creates/s, then the first pod recreated"
LOAD_NODE=$safe LOAD_ARGS="-events-url http://webhook-receiver:8080" RATE=$SN_UPGRADE_RATE load_start "$SN_NS" load-upgrade "$SN_UPGRADE_LOAD_S"
sleep 5
t=$SECONDS
if helm upgrade "$REL" "$CHART" -n "$SN_NS" "${sn_values[@]}" --wait --timeout 300s >"$CLUSTER_DIR/logs/install-sentinel.log" 2>&1; then
  upgrade_s=$((SECONDS - t))
else
  upgrade_s=-1
  tail -n 20 "$CLUSTER_DIR/logs/install-sentinel.log"
  kubectl get pods -n "$SN_NS" -o wide
  for p in 0 1 2; do kubectl logs -n "$SN_NS" "$REL-redis-$p" -c redis --tail=5 2>/dev/null; kubectl logs -n "$SN_NS" "$REL-redis-$p" -c sentinel --tail=5 2>/dev/null; done
fi
# The roll hook recreated the first pod (the master) last, with its Sentinel
# (the set failed over if it was gone long enough). Were it still on its
# standalone template (redis.updateStrategy OnDelete), recreate it.
if [[ " $(kubectl get pod -n "$SN_NS" "$REL-redis-0" -o jsonpath='{.spec.containers[*].name}') " == *" sentinel "* ]]; then
  first_ms=0
else
  OLD_UID=$(kubectl get pod -n "$SN_NS" "$REL-redis-0" -o jsonpath='{.metadata.uid}')
  kubectl delete pod -n "$SN_NS" "$REL-redis-0" --wait=false >/dev/null
  first_ms=$(ready_again "$SN_NS" "$REL-redis-0" 120) || first_ms=-1
fi
s=$(load_result "$SN_NS" load-upgrade) || s='{}'
sidecars=$(kubectl get pod -n "$SN_NS" "$REL-redis-0" -o jsonpath='{.spec.containers[*].name}')
figures "sentinel-from-standalone upgrade_s=$upgrade_s first_pod_ready_ms=$first_ms first_pod_containers=[$sidecars] unavailable_503=$(jq .Unavailable <<<"$s") $(events_figures "$s")"
if load_verdict sentinel-from-standalone "$s" 1 && events_ok "$s" && ((upgrade_s >= 0 && first_ms >= 0)) && [[ " $sidecars " == *" sentinel "* ]]; then
  pass "standalone → Sentinel set under load: helm upgrade --wait in ${upgrade_s}s, the first pod recreated with its Sentinel ($( ((first_ms == 0)) && echo "by the roll hook" || echo "deleted, Ready in ${first_ms}ms")); $(jq .Unavailable <<<"$s") creates answered 503 with Retry-After, every acknowledged plant (standalone's included) read back and its plant.created received"
else
  fail "standalone → Sentinel set: upgrade ${upgrade_s}s, first pod Ready ${first_ms}ms with containers [$sidecars]; events: $(events_figures "$s")"
fi
# Every pod of the set Ready and the set settled before it is judged.
kubectl wait -n "$SN_NS" --for=condition=Ready pods -l "app.kubernetes.io/instance=$REL" --timeout=60s >/dev/null 2>&1 || true
wait_settled "$SN_NS" 60 || echo "the set did not settle within 60s after the upgrade"
r=$(roles "$SN_NS" | sort | tr '\n' ' ')
master=$(master_pod "$SN_NS")
agree=0 others=""
for p in $(redis_pods "$SN_NS"); do
  [[ $(sentinel_in "$SN_NS" "$p" sentinel get-master-addr-by-name plantstore | head -n 1) == "$master."* ]] && agree=$((agree + 1))
  others+="$(sentinel_in "$SN_NS" "$p" sentinel master plantstore | sed -n '/^num-other-sentinels$/{n;p}') "
done
in_sync=$(redis_in "$SN_NS" "$master" info replication | grep -c '^slave[0-9]*:.*state=online' || true)
api_zones=$(zones "$SN_NS" app.kubernetes.io/component=api)
redis_zones=$(zones "$SN_NS" app.kubernetes.io/component=redis)
pdbs=$(kubectl get pdb -n "$SN_NS" -o jsonpath='{range .items[*]}{.metadata.name}:{.spec.minAvailable}/{.spec.maxUnavailable} {end}')
figures "sentinel-install roles=[${r% }] master=$master sentinels_agreeing=$agree other_sentinels=[${others% }] replicas_online=$in_sync api_zones=[$api_zones] redis_zones=[$redis_zones] pdbs=[${pdbs% }]"
if [[ $(grep -o '=master' <<<"$r" | wc -l) == 1 && $(grep -o '=slave' <<<"$r" | wc -l) == 2 && $agree == 3 && $in_sync == 2 && ${others% } == "2 2 2" ]]; then
  pass "one master ($master) and two replicas online; the three Sentinels name it and know each other"
else
  fail "Sentinel set: roles [$r], master '$master', $agree Sentinels agreeing, other Sentinels [$others], $in_sync replicas online"
fi
if [[ $api_zones == "a b c" && $redis_zones == "a b c" ]]; then
  pass "spread by the chart's topologySpreadConstraints: the three API pods in zones [$api_zones], the three Redis pods in zones [$redis_zones]"
else
  fail "spread: API pods in zones [$api_zones], Redis pods in [$redis_zones], want a b c each"
fi
if [[ " $pdbs" == *" $REL:1/ "* && " $pdbs" == *" $REL-redis:/1 "* ]]; then
  pass "PodDisruptionBudgets on by default: the API pods' (minAvailable 1) and the Redis set's (maxUnavailable 1)"
else
  fail "PodDisruptionBudgets: [$pdbs], want $REL minAvailable 1 and $REL-redis maxUnavailable 1"
fi

master_node=$(pod_node "$SN_NS" "$master")
# The load and the subscriber move, not the master, if the move from
# standalone left it on their node: the drain measures one handover, not two.
[[ $master_node != "$safe" ]] || safe=$(subscriber_off "$master_node")

stage "the master's node ($master_node, zone $(zone_of "$master_node")) drained under $RATE creates/s"
old=$master
OLD_UID=$(kubectl get pod -n "$SN_NS" "$old" -o jsonpath='{.metadata.uid}')
LOAD_NODE=$safe LOAD_ARGS="-events-url http://webhook-receiver:8080" load_start "$SN_NS" load-drain 40
sleep 10
# The Redis servers' logs (the old master's preStop's switchover line, what
# the new master did) outlive their pods.
pod_logs_start "$SN_NS" app.kubernetes.io/component=redis redis "$CLUSTER_DIR/logs/drain-redis.log"
# Redis's own record of what stalled it (an fsync, a fork, a command) over
# 100 ms, for a failure to show.
for p in $(redis_pods "$SN_NS"); do redis_in "$SN_NS" "$p" config set latency-monitor-threshold 100 >/dev/null; done
api_logs_start "$SN_NS" "$CLUSTER_DIR/logs/api-drain.log"
t=$(ms)
if kubectl drain "$master_node" --ignore-daemonsets --delete-emptydir-data --force --timeout=120s >"$CLUSTER_DIR/logs/drain-sentinel.log" 2>&1; then
  drained_ms=$(($(ms) - t))
else
  drained_ms=-1
  tail -n 5 "$CLUSTER_DIR/logs/drain-sentinel.log"
fi
new=$(wait_master "$SN_NS" "$old" 60 "$old") || new=""
promoted_ms=$(($(ms) - t))
s=$(load_result "$SN_NS" load-drain) || s='{}'
window_ms=$(window_503_ms "$s")
pending=$(kubectl get pod -n "$SN_NS" "$old" -o jsonpath='{.status.phase} {.status.conditions[?(@.type=="PodScheduled")].reason}' 2>/dev/null)
figures "sentinel-drain node=$master_node drained_ms=$drained_ms master=$old promoted=$new promoted_ms=$promoted_ms unavailable_503=$(jq .Unavailable <<<"$s") window_503_ms=$window_ms transport_errors=$(jq .TransportErrors <<<"$s") $(events_figures "$s") evicted_redis=[$pending]"
pod_logs_stop "$CLUSTER_DIR/logs/drain-redis.log"
pod_logs_stop "$CLUSTER_DIR/logs/api-drain.log"
# The handover bounds the 503s to a few seconds: writes paused, then the
# leading Sentinel's promotion and the other replica's reconfiguration, each
# confirmed by its once-a-second INFO, the other Sentinel's update from the
# leader's hello (every 2 s), then the API pods moving to the new master.
# Its goal is 8 s (1.4-3.3 s in most runs); 8.8, 9.1 and 10.0 s when the
# first Sentinel asked did not answer, so a run fails only past the node-loss
# scenario's bound
# (SN_KILL_503_MS: down-after and an election): a planned handover never
# costs more than a lost node. Past the goal, the timeline below is printed
# either way.
# The node loss's 503s (below): from the kill (none before it but for
# requests then in flight, sent within the store timeout of 1 s) until the
# new master answers, down-after (5 s) and the election, with room for a
# loaded machine.
SN_KILL_503_MS=12000
SN_DRAIN_GOAL_MS=8000 SN_DRAIN_503_MS=$SN_KILL_503_MS
drain_goal=$( ((window_ms <= SN_DRAIN_GOAL_MS)) && echo "within its ${SN_DRAIN_GOAL_MS}ms goal" || echo "OVER its ${SN_DRAIN_GOAL_MS}ms goal")
if load_verdict sentinel-drain "$s" 1 && [[ -n $new && $drained_ms -ge 0 ]] && events_ok "$s" && ((window_ms <= SN_DRAIN_503_MS)); then
  pass "drain of $master_node through the PDBs in ${drained_ms}ms: $new promoted, $(jq .Unavailable <<<"$s") creates answered 503 with Retry-After over ${window_ms}ms, $drain_goal (bound ${SN_DRAIN_503_MS}ms), no transport error, every acknowledged plant read back and its plant.created received"
  drain_ok=1
else
  fail "drain under load (drained in ${drained_ms}ms, new master '${new:-none}', 503s over ${window_ms}ms, bound ${SN_DRAIN_503_MS}ms; events: $(events_figures "$s"))"
  drain_ok=0
fi
if ((!drain_ok || window_ms > SN_DRAIN_GOAL_MS)); then
  # When, from the drain's start: the load's first 503, first 200 after
  # the last and slowest answers, the old master's switchover, the
  # Sentinels' failover steps and TILT (a Sentinel stalled over 2 s acts on
  # nothing for the next 30 s).
  jq -c --argjson t "$t" '{first_503_ms: (.First503 - $t), first_ok_after_ms: (.FirstOKAfter503 - $t),
    slowest: [.Slowest[]? | capture("^(?<code>[0-9]+) sent=(?<sent>[0-9]+) after=(?<after>[0-9]+)ms") |
      "\(.code) sent at \((.sent | tonumber) - $t)ms, answered \(.after)ms later"]}' <<<"$s" || true
  echo "drain began $(date -u -d "@$((t / 1000))" +%H:%M:%S).$((t % 1000)) UTC"
  # Shortest and most telling first: CI keeps only part of a long output.
  grep switchover "$CLUSTER_DIR/logs/drain-redis.log" || true
  for p in $(redis_pods "$SN_NS"); do
    kubectl logs -n "$SN_NS" "$p" -c sentinel --since=3m 2>/dev/null |
      grep -E 'user requested FAILOVER|try-failover|elected-leader|selected-slave|promoted-slave|slave-reconf|switch-master|failover-end|failover-abort|[+-]tilt' | sed "s|^|[$p sentinel] |" || true
  done
  echo "the API pods' warnings:"
  api_logs_warnings "$CLUSTER_DIR/logs/api-drain.log"
  for p in $(redis_pods "$SN_NS"); do echo "$p: latency over 100 ms (event, last at, last ms, max ms): $(redis_in "$SN_NS" "$p" latency latest | paste -sd ' ')"; done
  [[ -z $new ]] || { echo "the new master's log:"; grep -F "[pod/$new/" "$CLUSTER_DIR/logs/drain-redis.log" | head -n 25; }
fi
# Its volume is on the drained node: the server waits for it, Pending, as
# docs/reliability.md says, and comes back as a replica once it is uncordoned.
if [[ $pending == "Pending Unschedulable" ]]; then
  pass "the drained server's pod $old waits for its node (Pending, Unschedulable: its PersistentVolume is on $master_node)"
else
  fail "the drained server's pod $old: [$pending], want Pending Unschedulable while its node is cordoned"
fi
kubectl uncordon "$master_node" >/dev/null
rejoin_ms=$(ready_again "$SN_NS" "$old" 120) || true
role=$(redis_in "$SN_NS" "$old" info replication | sed -n 's/^role://p')
refused=$(redis_in "$SN_NS" "$old" set sentinel-scenario-probe x)
figures "sentinel-uncordon server=$old ready_ms=$rejoin_ms role=$role write_to_it=[$refused]"
if [[ $role == slave && $refused == READONLY* ]]; then
  pass "$master_node uncordoned: $old back in ${rejoin_ms}ms as a replica of $new; a write to it is refused ($refused)"
else
  fail "$old after the uncordon: role '$role', a write answered '$refused'"
fi

stage "the Redis password rotated as the chart README says, then a new Redis image (:7.0 as :7.0-roll), under $RATE creates/s"
# One load over both. First the rotation, the README's own block: no
# request may fail. Then the same image under another tag: the pod template
# changes, so the chart's roll hook (roll-redis) replaces every server
# (which restart with the new password alone): the replicas first, each once
# every server is Ready (a replica: in sync), then the master, which hands
# over once; 503s with Retry-After are allowed from the roll's start.
node_image_tag plantstore.test/redis:7.0 plantstore.test/redis:7.0-roll
master_before=$(master_pod "$SN_NS")
uids_before=$(kubectl get pods -n "$SN_NS" -l app.kubernetes.io/component=redis -o jsonpath='{.items[*].metadata.uid}')
pod_logs_start "$SN_NS" app.kubernetes.io/component=redis redis "$CLUSTER_DIR/logs/roll-redis.log"
LOAD_NODE=$safe LOAD_ARGS="-events-url http://webhook-receiver:8080" load_start "$SN_NS" load-roll 150
sleep 5
old_sha=$(secret_digest "$SN_NS" "$REL-redis" redis-password)
t_rot=$(ms)
{
  echo "ns=$SN_NS release=$REL fullname=$REL master=plantstore"
  awk '/<!-- rotate-redis-password -->/ {f = 1; next} f && /^```sh/ {g = 1; next} g && /^```/ {exit} g' "$CHART/README.md" | tail -n +2
} >"$CLUSTER_DIR/rotate-redis-password.sh"
if bash "$CLUSTER_DIR/rotate-redis-password.sh" >"$CLUSTER_DIR/logs/rotate-redis-password.log" 2>&1; then
  rotated_ms=$(($(ms) - t_rot))
else
  rotated_ms=-1
  tail -n 10 "$CLUSTER_DIR/logs/rotate-redis-password.log"
fi
new_sha=$(secret_digest "$SN_NS" "$REL-redis" redis-password)
# Every server and Sentinel now refuses the old password and takes the new one.
# auth_probe PORT: PONG or the error with the Secret's password (new) and
# with the container's environment (the old one, from the pod's start).
auth_probe='new=$(REDISCLI_AUTH=$(cat /etc/redis-auth/password) redis-cli -p "$1" ping 2>&1 | head -n 1 | cut -c1-9)
old=$(REDISCLI_AUTH=$REDIS_PASSWORD redis-cli -p "$1" ping 2>&1 | grep -o -m1 -e WRONGPASS -e NOAUTH -e PONG)
echo "$new/$old"'
auth_check="" auth_ok=0
for p in $(redis_pods "$SN_NS"); do
  for c in redis:6379 sentinel:26379; do
    a=$(kubectl exec -n "$SN_NS" "$p" -c "${c%:*}" -- sh -c "$auth_probe" _ "${c#*:}" 2>/dev/null | tr -d '\r')
    auth_check+="$p/${c%:*}=$a "
    [[ $a != PONG/WRONGPASS ]] || auth_ok=$((auth_ok + 1))
  done
done
t=$(ms)
# The hook Job is deleted once it succeeds: its log is followed as it runs.
(for _ in $(seq 240); do kubectl logs -f -n "$SN_NS" "job/$REL-redis-roll" 2>/dev/null && break; sleep 1; done) >"$CLUSTER_DIR/logs/roll-job.log" &
roll_log=$!
# helm returns once the post-upgrade hook (the roll) has succeeded.
if helm upgrade "$REL" "$CHART" -n "$SN_NS" "${sn_values[@]}" --set-string redis.image.tag=7.0-roll --wait --timeout 300s \
  >"$CLUSTER_DIR/logs/roll-sentinel.log" 2>&1; then
  rolled_ms=$(($(ms) - t))
else
  rolled_ms=-1
  tail -n 10 "$CLUSTER_DIR/logs/roll-sentinel.log"
  kubectl get pods -n "$SN_NS" -o wide
fi
# The roll is done: 5 s more of the load (a 200 after its last 503), then
# its check, rather than the rest of a bound long enough for a slow rotation.
sleep 5
load_stop "$SN_NS" load-roll
s=$(load_result "$SN_NS" load-roll) || s='{}'
pod_logs_stop "$CLUSTER_DIR/logs/roll-redis.log"
sleep 1
kill "$roll_log" 2>/dev/null || true
cat "$CLUSTER_DIR/logs/roll-job.log"
# The order the servers were replaced in: their new pods' creation times.
order=$(kubectl get pods -n "$SN_NS" -l app.kubernetes.io/component=redis --sort-by=.metadata.creationTimestamp -o jsonpath='{.items[*].metadata.name}')
images=$(kubectl get pods -n "$SN_NS" -l app.kubernetes.io/component=redis -o jsonpath='{.items[*].spec.containers[?(@.name=="redis")].image}' | tr ' ' '\n' | sort -u | paste -sd ' ')
uids_after=$(kubectl get pods -n "$SN_NS" -l app.kubernetes.io/component=redis -o jsonpath='{.items[*].metadata.uid}')
replaced=$(comm -12 <(tr ' ' '\n' <<<"$uids_before" | sort) <(tr ' ' '\n' <<<"$uids_after" | sort) | grep -c . || true)
replaced=$((3 - replaced))
handovers=$(grep -c 'switchover: .* hands over to [^n]' "$CLUSTER_DIR/logs/roll-redis.log" || true)
# Replicas first, the master last: the old master's pod is the newest.
last=${order##* }
wait_settled "$SN_NS" 60 || echo "the set did not settle within 60s after the roll"
master_after=$(master_pod "$SN_NS")
window_ms=$(window_503_ms "$s")
figures "sentinel-roll image=7.0-roll rolled_ms=$rolled_ms replaced=$replaced/3 order=[$order] master_before=$master_before master_after=$master_after handovers=$handovers unavailable_503=$(jq .Unavailable <<<"$s") first_to_last_503_ms=$window_ms transport_errors=$(jq .TransportErrors <<<"$s") $(events_figures "$s")"
first_503=$(jq '.First503 // 0' <<<"$s")
figures "redis-password-rotation rotated_ms=$rotated_ms secret_changed=$([[ $old_sha != "$new_sha" ]] && echo yes || echo no) first_503_after_rotation_ms=$(((first_503 > 0) ? first_503 - t_rot - rotated_ms : -1)) auth=[${auth_check% }]"
# Each pod answers PONG with the Secret's (new) password, and its
# environment's (the old one, from the pod's start) is refused.
if ((rotated_ms >= 0 && (first_503 == 0 || first_503 >= t) && auth_ok == 6)) && [[ $old_sha != "$new_sha" ]] &&
  covered "$s" "$t_rot" "$t"; then
  pass "the Redis password rotated by the chart README's block in ${rotated_ms}ms under $RATE creates/s: no request failed before the roll, every server and Sentinel takes the new password and refuses the old"
else
  fail "the Redis password rotation: ${rotated_ms}ms, first 503 at $((first_503 - t_rot))ms from its start (the roll began at $((t - t_rot))ms), Secret changed: $([[ $old_sha != "$new_sha" ]] && echo yes || echo no), auth: ${auth_check% }"
  tail -n 5 "$CLUSTER_DIR/logs/rotate-redis-password.log"
fi
if load_verdict sentinel-roll "$s" 1 && events_ok "$s" && ((rolled_ms >= 0 && replaced == 3 && handovers == 1)) && covered "$s" "$t" "$((t + rolled_ms))" &&
  [[ $images == "plantstore.test/redis:7.0-roll" && -n $master_after && $last == "$master_before" && $master_after != "$master_before" ]]; then
  pass "a new Redis image rolled by the upgrade alone in ${rolled_ms}ms: 3 of 3 servers replaced, the replicas first and the master last (order $order; master $master_before, then $master_after; one handover), $(jq .Unavailable <<<"$s") creates answered 503 with Retry-After (first to last ${window_ms}ms), no transport error, every acknowledged plant read back and its plant.created received"
else
  fail "the Redis image roll: rolled in ${rolled_ms}ms (the load covering it: $(covered "$s" "$t" "$((t + rolled_ms))" && echo yes || echo no)), $replaced of 3 replaced, order [$order] (master before: $master_before, after: '${master_after}'), $handovers handovers, images [$images]; events: $(events_figures "$s")"
  grep switchover "$CLUSTER_DIR/logs/roll-redis.log" || true
fi

# pt_settle: after a heal, every node Ready again and the set settled.
pt_settle() {
  kubectl wait --for=condition=Ready nodes --all --timeout=120s >/dev/null || echo "a node not Ready 120s after the heal"
  wait_settled "$SN_NS" 90 || echo "the set did not settle within 90s after the heal"
}
stage "partitions under recorded histories: the master's zone, (CLUSTER_FULL=1) a replica's, a client's zone from the master's (one way)"
master=$(master_off "$SN_NS" "$(master_pod "$SN_NS")" "$safe")
mzone=$(zone_of "$(pod_node "$SN_NS" "$master")")
partition_scenario "$SN_NS" master-zone 30 "$mzone"
pt_settle
master=$(master_pod "$SN_NS")
mzone=$(zone_of "$(pod_node "$SN_NS" "$master")")
szone=$(zone_of "$safe")
rzone=$(kubectl get nodes -o jsonpath='{.items[*].metadata.labels.topology\.kubernetes\.io/zone}' | tr ' ' '\n' | grep -vx -e "$mzone" -e "$szone" | head -n 1)
if ((FULL)); then # a replica's zone cut off: no election, the master keeps its quorum
  partition_scenario "$SN_NS" replica-zone 20 "$rzone"
  pt_settle
fi
partition_scenario "$SN_NS" one-way 20 --one-way "$rzone" -- "$mzone"
pt_settle

# node_kill_master LOADS: the master moved off the loads' node, the loads
# (LOADS: direct, or gateway for the Gateway's and the generated client's)
# started, and 5 s later the master's node killed; then the promotion and the
# node's NotReady timed from the kill (t).
node_kill_master() {
  master=$(master_off "$SN_NS" "$(master_pod "$SN_NS")" "$safe")
  master_node=$(pod_node "$SN_NS" "$master")
  old=$master
  OLD_UID=$(kubectl get pod -n "$SN_NS" "$old" -o jsonpath='{.metadata.uid}')
  traefik_on_node=$(kubectl get pods -n "$GW_NS" -l app.kubernetes.io/name=traefik --field-selector "spec.nodeName=$master_node" -o name | wc -l)
  # The drain above left its API pod on another node (nothing moves it back):
  # the node killed may hold two of the three, and until they leave the
  # endpoints the Gateway's picks land on a dead pod that often.
  api_on_node=$(kubectl get pods -n "$SN_NS" -l app.kubernetes.io/component=api --field-selector "spec.nodeName=$master_node" -o name | wc -l)
  if [[ $1 == direct ]]; then
    LOAD_NODE=$safe LOAD_ARGS="-events-url http://webhook-receiver:8080 -timeout 2s" RATE=$SN_KILL_DIRECT_RATE load_start "$SN_NS" load-kill-direct 40
  else
    local_traefik=$(kubectl get pods -n "$GW_NS" -l app.kubernetes.io/name=traefik --field-selector "spec.nodeName=$safe,status.phase=Running" -o name | wc -l)
    ((local_traefik > 0)) || fail "no Traefik pod on $safe, the node the load enters the Gateway by"
    gw_access_log_start "$CLUSTER_DIR/logs/traefik-node-loss.log"
    LOAD_NODE=$safe LOAD_GATEWAY="$GW_LOCAL_IP $GW_HOST gateway-ca" LOAD_ARGS="-events-url http://webhook-receiver:8080 -timeout 60s -max-in-flight $SN_KILL_HELD" \
      load_start "$SN_NS" load-kill 40
    LOAD_NODE=$safe LOAD_GATEWAY="$GW_IP $GW_HOST gateway-ca" LOAD_ARGS="-events-url http://webhook-receiver:8080 -timeout 20s -retries 10" RATE=50 \
      load_start "$SN_NS" load-kill-client 40
  fi
  sleep 5
  t=$(ms)
  "$CLUSTER" node-kill "$master_node" >/dev/null
  new=$(wait_master "$SN_NS" "$old" 60 "$old") || new=""
  promoted_ms=$(($(ms) - t))
  notready_ms=-1
  while (($(ms) - t < 90000)); do
    [[ $(kubectl get node "$master_node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') != True ]] && { notready_ms=$(($(ms) - t)); break; }
    sleep 0.5
  done
}
# node_loss_verdict LOAD WHAT: the figures of one plain load across the
# kill, and PASS when every failure is a 503 with Retry-After within the
# bound or (the dead node's pods, until the control plane has seen it gone:
# its NotReady, then every kube-proxy) no answer, and nothing acknowledged
# is lost or without its event.
node_loss_verdict() {
  local load=$1 what=$2 s window_ms errors_until_ms first_503_ms p
  s=$(load_result "$SN_NS" "$load") || s='{}'
  window_ms=$(window_503_ms "$s")
  errors_until_ms=$(jq --argjson t "$t" 'if .LastTransportError > 0 then .LastTransportError - $t else 0 end' <<<"$s" 2>/dev/null || echo -1)
  first_503_ms=$(jq --argjson t "$t" 'if .First503 > 0 then .First503 - $t else 0 end' <<<"$s" 2>/dev/null || echo -1)
  figures "sentinel-node-loss${load#load-kill} node=$master_node traefik_pods_on_it=$traefik_on_node api_pods_on_it=$api_on_node master=$old promoted=$new promoted_ms=$promoted_ms node_notready_ms=$notready_ms rate=$(jq '.Sent / 40 | floor' <<<"$s") unavailable_503=$(jq .Unavailable <<<"$s") first_503_after_kill_ms=$first_503_ms window_503_ms=$window_ms transport_errors=$(jq .TransportErrors <<<"$s") last_transport_error_after_kill_ms=$errors_until_ms $(events_figures "$s")"
  if load_verdict "sentinel-node-loss${load#load-kill}" "$(jq -c '.TransportErrors = 0 | .ErrorSamples = null' <<<"$s" 2>/dev/null || echo '{}')" 1 && [[ -n $new ]] && events_ok "$s" &&
    ((errors_until_ms <= notready_ms + 10000 && first_503_ms >= -1000 && window_ms <= SN_KILL_503_MS)); then
    pass "node $master_node killed ($what): $new promoted in ${promoted_ms}ms; $(jq .Unavailable <<<"$s") creates answered 503 with Retry-After over ${window_ms}ms from the kill (bound ${SN_KILL_503_MS}ms), $(jq .TransportErrors <<<"$s") unanswered (none later than ${errors_until_ms}ms after the kill: NotReady at ${notready_ms}ms); every acknowledged plant read back and its plant.created received"
  else
    fail "node loss ($what): new master '${new:-none}' after ${promoted_ms}ms, NotReady at ${notready_ms}ms, last unanswered ${errors_until_ms}ms, 503s from ${first_503_ms}ms after the kill over ${window_ms}ms, bound ${SN_KILL_503_MS}ms; events: $(events_figures "$s")"
    # Kept with the failure state: when each API pod and each Sentinel left
    # alive saw the failover (their lines but the access log's).
    { kubectl logs -n "$SN_NS" -l app.kubernetes.io/component=api --since=3m --tail=-1 --prefix | grep -v '"msg":"request"'
      for p in 0 1 2; do kubectl logs -n "$SN_NS" "$REL-redis-$p" -c sentinel --since=3m --prefix; done
    } >"$CLUSTER_DIR/logs/node-loss${load#load-kill}.log" 2>&1 || true
  fi
}
# node_back FIGURE: the killed node boots again: its kubelet finds the control
# plane's view, and the server's pod (its volume is there) starts anew as a
# replica; FIGURE names the line of figures.
node_back() {
  local t boot_ms rejoin_ms role refused online converged_ms
  t=$(ms)
  "$CLUSTER" node-start "$master_node" >"$CLUSTER_DIR/logs/node-start-sentinel.log" 2>&1 || tail -n 5 "$CLUSTER_DIR/logs/node-start-sentinel.log"
  boot_ms=$(($(ms) - t))
  # The same pod restarted in place when the node is back before its pods were
  # evicted (30 s after NotReady), a new one otherwise: either, once Ready (the
  # node controller marked it not Ready while the node was gone).
  rejoin_ms=$(OLD_UID='' ready_again "$SN_NS" "$old" 180) || true
  role=$(redis_in "$SN_NS" "$old" info replication | sed -n 's/^role://p')
  refused=$(redis_in "$SN_NS" "$old" set sentinel-scenario-probe x)
  # Converged: every pod of the release Ready again and both replicas in sync
  # with the new master (a returning server may need a full resync first).
  SN_CONVERGE_S=120
  online=0
  while (($(ms) - t < SN_CONVERGE_S * 1000)); do
    online=$(redis_in "$SN_NS" "$new" info replication | grep -c '^slave[0-9]*:.*state=online' || true)
    ((online == 2)) && kubectl wait -n "$SN_NS" --for=condition=Ready pods -l "app.kubernetes.io/instance=$REL" --timeout=1s >/dev/null 2>&1 && break
    sleep 1
  done
  converged_ms=$(($(ms) - t))
  figures "$1 node=$master_node boot_ms=$boot_ms server=$old ready_ms=$rejoin_ms role=$role write_to_it=[$refused] replicas_online=$online converged_ms=$converged_ms"
  if [[ $role == slave && $refused == READONLY* && $online == 2 ]] && ((converged_ms < SN_CONVERGE_S * 1000)); then
    pass "$master_node back (Ready in ${boot_ms}ms): $old a replica of $new again ${rejoin_ms}ms later, refusing writes ($refused); converged ${converged_ms}ms after the boot (every pod Ready, 2 replicas in sync; bound ${SN_CONVERGE_S}s)"
  else
    fail "after the node came back: $old role '$role', a write answered '$refused', $online replicas online after ${converged_ms}ms"
    kubectl get pods -n "$SN_NS" -o wide || true
    redis_in "$SN_NS" "$new" info replication
  fi
}

# The master's node dies twice. First under SN_KILL_DIRECT_RATE straight to
# the Service with a 2 s deadline (no Gateway, no retry: requests to the dead
# node's API pod get no answer until the node controller marks it NotReady):
# the service's own 503s, timed. Then through the Gateway at RATE, entering
# by the load's node's Traefik pod (traefik-local): the route's retries hold
# a create across the failover (11 attempts, each after the 503's Retry-After
# of 1 s), so the caller's deadline is 60 s (an attempt may also land on the
# dead node's pod, more than once, until it leaves the endpoints) and up to
# SN_KILL_HELD creates may be in flight; beside it the generated Go client
# (10 attempts, its default backoff) at 50/s through the cluster-wide
# Service, whose endpoints keep the dead node's Traefik pod until then; each
# attempt's deadline (20 s) beyond what the Gateway holds a request. Not
# both at once: the Gateway's retries of some 2,000 held creates take about
# a core of this machine's two while the master is away, and the direct
# load's 503s measured beside them outlasted the bound by the machine's
# overload (14-31 s), not the service's (the drain above: under 1 s).
SN_KILL_DIRECT_RATE=100 SN_KILL_HELD=4000
stage "a node dies under $SN_KILL_DIRECT_RATE creates/s straight to the Service: the master's"
node_kill_master direct
node_loss_verdict load-kill-direct "straight to the Service, $SN_KILL_DIRECT_RATE creates/s"
node_back sentinel-node-back-direct

stage "a node dies under $RATE creates/s through the Gateway: the master's"
node_kill_master gateway
sc=$(load_result "$SN_NS" load-kill-client) || sc='{}'
sg=$(load_result "$SN_NS" load-kill) || sg='{}'
# Traefik's log of the Gateway's loads: its 5xx answers, what its retry sent
# again, and what it held 20 s or more.
access=$(gw_access_log "$CLUSTER_DIR/logs/traefik-node-loss.log")
figures "sentinel-node-loss-gateway node=$master_node traefik_pods_on_it=$traefik_on_node api_pods_on_it=$api_on_node entered_by=$safe promoted_ms=$promoted_ms node_notready_ms=$notready_ms $(jq -rs '"retried=\([.[] | select(.RetryAttempts > 0)] | length) held_20s=\([.[] | select(.ms >= 20000)] | length) max_held_ms=\([.[].ms] | max // 0) answered_5xx=\([.[] | select(.DownstreamStatus >= 500)] | length)"' <<<"$access") unanswered_after_kill_ms=[$(jq --argjson t "$t" -r 'if .TransportErrors > 0 then "\(.FirstTransportError - $t)..\(.LastTransportError - $t)" else "" end' <<<"$sg" 2>/dev/null)] $(events_figures "$sg")"
if load_verdict sentinel-node-loss-gateway "$sg" && events_ok "$sg"; then
  pass "through the Gateway (the route's retries: what could not reach a pod, and a 503 after its Retry-After) across the node loss at $RATE creates/s: $(jq .Sent <<<"$sg") creates, every one 200 (0 failed, p99 $(jq .LatencyP99Ms <<<"$sg") ms, max $(jq .LatencyMaxMs <<<"$sg") ms), every plant read back and its plant.created received"
else
  fail "through the Gateway across the node loss: codes $(jq -c .Codes <<<"$sg"), $(jq .TransportErrors <<<"$sg") unanswered; events: $(events_figures "$sg")"
  kubectl get pods -n "$GW_NS" -o custom-columns='TRAEFIK:.metadata.name,NODE:.spec.nodeName,RESTARTS:.status.containerStatuses[0].restartCount,LAST_EXIT:.status.containerStatuses[0].lastState.terminated.reason'
  echo "Traefik's 5xx answers and the requests it held 20 s or more (OriginStatus 0: none from the pod):"
  jq -c 'select(.DownstreamStatus >= 500 or .ms >= 20000)' <<<"$access" | head -n 20
  echo "the retry503 plugin's attempts of those it held 20 s or more (code/ms+wait ms):"
  grep -h '^retry503 held' "$CLUSTER_DIR/logs/traefik-node-loss.log" | head -n 20
fi
figures "sentinel-node-loss-client retries=10 through=gateway $(events_figures "$sc")"
if load_verdict sentinel-node-loss-client "$sc" && events_ok "$sc"; then
  pass "through the Gateway with the generated Go client (10 attempts) across the same node loss: $(jq .Sent <<<"$sc") creates, every one 200 in the end (0 failed calls, p99 $(jq .LatencyP99Ms <<<"$sc") ms, max $(jq .LatencyMaxMs <<<"$sc") ms), every plant read back and its plant.created received"
else
  fail "the generated client through the Gateway across the node loss: codes $(jq -c .Codes <<<"$sc"), $(jq .TransportErrors <<<"$sc") failed calls; events: $(events_figures "$sc")"
fi
node_back sentinel-node-back

stage "rate-limit budgets in Redis, after the failovers"
# Ten requests of the limited client, each on a connection of its own (the
# Service spreads them over the three API pods): one budget, in the Redis
# the Sentinels name now, allows two. A limiter that failed open would let
# all ten through, one per pod up to six.
codes=$(client "$SN_NS" limited '
for i in 1 2 3 4 5 6 7 8 9 10; do
  curl -s -o /dev/null -w "%{http_code} " http://'"$REL"':8080/plants/$i -H "Authorization: Bearer '"$sn_limited_token"'"
done')
# Allowed: answered (the partitions' recorders left plants under small ids).
allowed=$(tr ' ' '\n' <<<"$codes" | grep -cE '^(200|404)$' || true)
limited=$(tr ' ' '\n' <<<"$codes" | grep -c '^429$' || true)
figures "sentinel-rate-limit codes=[${codes% }] allowed=$allowed limited=$limited"
if ((allowed == 2 && limited == 8)); then
  pass "one rate-limit budget across the three API pods through the Sentinels after the failovers: 2 of 10 requests allowed (rate 2/m, burst 2), 8 answered 429"
else
  fail "the limited client's ten requests answered [$codes]: want two answered (200 or 404) and eight 429"
fi

kubectl delete namespace "$SN_NS" --wait=false >/dev/null
