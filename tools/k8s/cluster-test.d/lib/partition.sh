# shellcheck shell=bash
# Network partitions, checked as Jepsen checks a database (sourced by
# 20-sentinel.sh, whose helpers it uses). A zone is cut off (cluster.sh
# partition: its node and pods run on and answer on their own side, the
# node controller sees the node go NotReady) while clients in every zone and
# one outside the cluster's pods create, read, delete and list the same few
# ids through the Service, each operation recorded with its call and answer
# times (k8s-load -history), for 20 s past the heal; the merged history of
# each id is checked for linearizability with
# porcupine (k8s-load -check), an illegal id's picture and operations kept
# under the run's logs. Beside them the open-loop create load counts what a
# caller of creates sees: the 503 window, acknowledged plants lost, events
# missing.

PT_IDS=16 PT_CALLERS=2 PT_PAUSE=20ms PT_RATE=100
K8S_LOAD="$(cat "$CLUSTER_DIR/bin")/k8s-load"

# history_start NS NAME ZONE SECS: a k8s-load -history pod on ZONE's node,
# through the release's Service. Each scenario names its own pods: an earlier
# one's may still be terminating (an apply would patch it, and it goes).
history_start() {
  kubectl apply -n "$1" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $2, labels: {app.kubernetes.io/name: scenario-load}}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  nodeSelector: {topology.kubernetes.io/zone: $3}
  # Not evicted when its node goes NotReady behind the cut (30 s later here):
  # its history is the cut-off zone's.
  tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute}, {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute}]
  containers:
    - name: load
      image: plantstore.test/load:1
      imagePullPolicy: Never
      args: [-url, "http://$REL:8080", -token-file, /etc/tokens/tokens, -history, "$PT_CALLERS", -ids, "$PT_IDS", -pause, "$PT_PAUSE", -timeout, 3s, -duration, "${4}s"]
      $SECURE
      volumeMounts: [{name: tokens, mountPath: /etc/tokens, readOnly: true}]
  volumes: [{name: tokens, secret: {secretName: $REL-tokens, items: [{key: tokens, path: tokens}]}}]
EOF
  kubectl wait -n "$1" --for=jsonpath='{.status.phase}'=Running "pod/$2" --timeout=60s >/dev/null ||
    echo "the recorder $2 is not running after 60s"
}

# partition_scenario NS NAME SECS CUT...: recorders in every zone and one in
# the control plane's namespace (outside the pods, to the Service's
# ClusterIP), and the create load on SAFE's node, for 10 s, then
# `cluster.sh partition CUT...` for SECS, then the heal and 20 s more; then
# the final reads, the check and a line of figures. PASS when the history
# is linearizable, no acknowledged plant is lost and no event missing.
partition_scenario() {
  local ns=$1 name=$2 secs=$3 z files=() dir total t_cut t_heal s v per_zone='' ip tokens outside
  shift 3
  dir=$CLUSTER_DIR/logs/partition-$name
  total=$((10 + secs + 20))
  mkdir -p "$dir"
  ip=$(kubectl get svc -n "$ns" "$REL" -o jsonpath='{.spec.clusterIP}')
  tokens=$dir/tokens
  kubectl get secret -n "$ns" "$REL-tokens" -o jsonpath='{.data.tokens}' | base64 -d >"$tokens"
  # The model starts from no plant: the ids an earlier scenario left are
  # deleted first (the first raw token of the file is the load's).
  local token i code deleted=''
  token=$(awk '!/^#/ && NF && $1 !~ /^sha256:/ {print $1; exit}' "$tokens")
  for ((i = 1; i <= PT_IDS; i++)); do
    code=$(node_curl -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $token" "http://$ip:8080/plants/$i")
    [[ $code == 204 || $code == 404 ]] || { fail "partition ($name): id $i could not be cleared before the scenario (DELETE answered $code)"; return; }
    deleted+=$code
  done
  for z in $(kubectl get nodes -o jsonpath='{.items[*].metadata.labels.topology\.kubernetes\.io/zone}'); do
    history_start "$ns" "history-$name-$z" "$z" "$total"
  done
  nsenter --net="/run/netns/$NETNS" "$K8S_LOAD" -url "http://$ip:8080" -token-file "$tokens" -history "$PT_CALLERS" -ids "$PT_IDS" \
    -pause "$PT_PAUSE" -timeout 3s -duration "${total}s" >"$dir/outside.json" 2>"$dir/outside.err" &
  outside=$!
  # shellcheck disable=SC2154 # safe: the caller's node away from the cut, beside the webhook subscriber
  LOAD_NODE=$safe LOAD_ARGS="-events-url http://webhook-receiver:8080 -timeout 5s" RATE=$PT_RATE load_start "$ns" "load-$name" "$total"
  sleep 10
  t_cut=$(ms)
  "$CLUSTER" partition "$@" >/dev/null
  sleep "$secs"
  "$CLUSTER" heal >/dev/null
  t_heal=$(ms)
  wait "$outside" || true
  files+=("$dir/outside.json")
  for z in $(kubectl get nodes -o jsonpath='{.items[*].metadata.labels.topology\.kubernetes\.io/zone}'); do
    kubectl wait -n "$ns" --for=jsonpath='{.status.phase}'=Succeeded "pod/history-$name-$z" --timeout=120s >/dev/null || true
    kubectl logs -n "$ns" "history-$name-$z" >"$dir/zone-$z.json" 2>&1 || true
    kubectl delete -n "$ns" pod "history-$name-$z" --wait=false >/dev/null || true
    files+=("$dir/zone-$z.json")
  done
  s=$(load_result "$ns" "load-$name") || s='{}'
  v=$("$K8S_LOAD" -check -ids "$PT_IDS" -check-timeout 60s -visualize "$dir/illegal" "${files[@]}" 2>&1 | tail -n 1) || true
  for f in "${files[@]}"; do
    # Operations by outcome (ok, a definite 404 or 409, indeterminate) and,
    # for the indeterminate ones, from when to when they were called,
    # relative to the cut.
    per_zone+=" $(basename "$f" .json)=$(jq -r --argjson cut "$t_cut" '[.Events[] | .Output.Result] as $r |
      "\($r | length)ops/ok=\([$r[] | select(. == 1 or . == 2 or . == 3 or . == 5 or . == 7)] | length)/definite=\([$r[] | select(. == 4 or . == 6)] | length)/indeterminate=\([$r[] | select(. == 0)] | length)" +
      ([.Events[] | select(.Output.Result == 0) | .Call / 1000000 - $cut | floor] | if length > 0 then "(\(min)..\(max)ms)" else "" end)' "$f" 2>/dev/null || echo none)"
  done
  figures "partition-$name cut=[$*] for ${secs}s ops_per_s=$(jq -s --argjson s "$total" '[.[].Ops // 0] | add / $s | floor' "${files[@]}" 2>/dev/null)${per_zone} verdict=$(jq -c '{Linearizable, Summary}' <<<"$v" 2>/dev/null || echo "'$v'")"
  load_verdict "partition-$name-creates" "$s" 1 || true
  figures "partition-$name creates: unavailable_503=$(jq .Unavailable <<<"$s") first_to_last_503_ms=$(window_503_ms "$s") lost=$(jq '.Lost | length' <<<"$s") $(events_figures "$s")"
  if jq -e '.Linearizable' <<<"$v" >/dev/null 2>&1 && jq -e '(.Lost | length) == 0 and .Acknowledged > 0' <<<"$s" >/dev/null && events_ok "$s"; then
    pass "partition ($name): [$*] cut off for ${secs}s under $(jq -s '[.[].Ops // 0] | add' "${files[@]}" 2>/dev/null) recorded operations and $PT_RATE creates/s: every id's history linearizable ($(jq -r .Summary <<<"$v")), no acknowledged plant lost, every plant.created received"
  else
    fail "partition ($name): [$*] for ${secs}s: verdict $(jq -r '.Summary // .' <<<"$v" 2>/dev/null); creates: lost $(jq '.Lost | length' <<<"$s"), $(events_figures "$s"); pictures: $(jq -r '.Visualizations // [] | join(" ")' <<<"$v" 2>/dev/null)"
  fi
  echo "partition $name: cut at $t_cut, healed at $t_heal" >>"$dir/times"
}
