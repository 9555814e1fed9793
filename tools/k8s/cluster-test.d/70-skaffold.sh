# shellcheck shell=bash
# skaffold (built from tools/k8s/client-go-0.33) on this cluster through the
# profile test-cluster: no Docker daemon, no registry, the development image
# (tools/k8s/skaffold-dev-build.sh). `skaffold dev` builds and deploys the
# chart (its first deploy is what `skaffold run` does: the same build,
# import and helm install); then five saved Go changes, each measured from
# the moment the file is saved to the first answer of the new code (the
# custom test's go build on the host, skaffold's file sync of the binary,
# k8s-devrun's restart); then the profile debug on the same release: the
# service under Delve, its port forwarded by skaffold, and a DAP client
# (tools/internal/dapcheck) that stops a create at a breakpoint in its
# handler, finds the request's plant name among the frame's variables,
# continues, and gets the answer.
# The scenario edits a copy of the repository.

stage "skaffold dev (profile test-cluster: development image, file sync; profile debug: Delve)"
SK_NS=skaffold
restricted_ns "$SK_NS"
src=$CLUSTER_DIR/skaffold-src
rm -rf "$src"
git clone -q --no-hardlinks "$REPO" "$src"
# The working tree's uncommitted changes too: what a developer runs is what they see.
(cd "$REPO" && git ls-files -m -o --exclude-standard -z | xargs -0 -r cp --parents -t "$src")
SKAFFOLD=("$src/tools/k8s/skaffold.sh")
# The tools, before anything is timed: skaffold, the development image's
# own (k8s-devrun, k8s-devimage), Delve and the DAP client; and the
# service's dependencies with the development build's flags, as on a
# machine that has built it before. The service's own packages are built
# inside the first deploy's time.
sk_tools() {
  "${SKAFFOLD[@]}" version >/dev/null &&
    (cd "$src" && export GOWORK=off CGO_ENABLED=0 GOOS=linux &&
      mapfile -t deps < <(go list -deps ./cmd/plantstore | grep -v '^github.com/plantstore/plantstore') &&
      go build -buildvcs=false -gcflags=all=-dwarf=false "${deps[@]}") &&
    (cd "$src/tools/k8s" && GOWORK=off CGO_ENABLED=0 GOOS=linux go build -o "$src/bin/dev/tools/" ./cmd/k8s-devrun) &&
    (cd "$src/tools/k8s" && GOWORK=off go build -o "$src/bin/dev/tools/" ./cmd/k8s-devimage) &&
    (cd "$src/tools" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$src/bin/dev/tools/dlv" github.com/go-delve/delve/cmd/dlv) &&
    (cd "$src/tools" && GOWORK=off go build -o "$src/bin/dev/tools/dapcheck" ./internal/dapcheck)
}
logged skaffold-build "skaffold: tool build" sk_tools || true

# sk_served MARKER MS: sk_at, the time (epoch ms) of the first answer to an
# unknown path (a 404 with a message, through the Service from the control
# plane's namespace) that holds MARKER, polled every 50 ms for at most MS;
# -1, and the last answer in sk_last, when none does. One bash in that
# namespace polls (HTTP/1.0 over /dev/tcp, EPOCHREALTIME): no process per
# poll, so the polling takes next to no CPU from the build and sync it
# times (an nsenter and a curl every 50 ms take a third of a CPU).
sk_ip='' sk_last='' sk_at=-1
sk_served() {
  [[ -n $sk_ip ]] || sk_ip=$(kubectl get svc -n "$SK_NS" plantstore -o jsonpath='{.spec.clusterIP}' 2>/dev/null) || true
  if [[ -z ${SK_PROBE_PID:-} ]]; then
    # A request line "ADDRESS DEADLINE_US MARKER", answered "served US" or
    # "late LAST-ANSWER" (on one line).
    # shellcheck disable=SC2016 # expanded by the bash in the node's namespace
    coproc SK_PROBE { nsenter --net="/run/netns/$NETNS" bash -c '
      exec 4<> <(:)
      while read -r addr deadline marker; do
        body="" reply=""
        while ((${EPOCHREALTIME/./} < deadline)); do
          if { exec 3<>"/dev/tcp/$addr/8080"; } 2>/dev/null; then
            printf "GET /no-such-path HTTP/1.0\r\n\r\n" >&3
            body=""
            read -r -d "" -t 1 -u 3 body
            exec 3<&-
            if [[ $body == *"$marker"* ]]; then reply="served ${EPOCHREALTIME/./}"; break; fi
          fi
          read -r -t 0.05 -u 4 _
        done
        echo "${reply:-late ${body//[$'"'"'\r\n'"'"']/ }}"
      done'; }
  fi
  local reply
  # A connect that hangs (an address nothing answers or refuses) outlasts
  # the deadline: that prober is stopped, the next call starts another.
  if ! { echo "${sk_ip:-none} $((${EPOCHREALTIME/./} + $2 * 1000)) $1" >&"${SK_PROBE[1]:-}" &&
    read -r -t $(($2 / 1000 + 10)) reply <&"${SK_PROBE[0]:-}"; } 2>/dev/null; then
    reply="late (no answer from $sk_ip)"
    kill "$SK_PROBE_PID" 2>/dev/null || true
    wait "$SK_PROBE_PID" 2>/dev/null || true
    SK_PROBE_PID=''
  fi
  if [[ $reply == served* ]]; then sk_at=$((${reply#served } / 1000)); else sk_at=-1 sk_last=${reply#late }; fi
}
# sk_dev LOG ARGS...: skaffold dev in the background; sk_watching LOG: wait
# until it watches (300s at most).
sk_dev() {
  local log=$1
  shift
  : >"$log"
  "${SKAFFOLD[@]}" dev -v info -p "$@" -n "$SK_NS" >"$log" 2>&1 &
  sk_pid=$!
}
sk_watching() {
  local _
  for _ in $(seq 1500); do
    grep -q 'Watching for changes' "$1" && return 0
    kill -0 "$sk_pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
sec() { awk "BEGIN {printf \"%.1f\", $1 / 1000}"; }
# sk_took LOG PHRASE: the milliseconds that skaffold's log (-v info) gives
# after PHRASE ("Build completed in 5.428 seconds", "... in 193.8ms") the
# first time, -1 without it: where a first deploy's time went.
sk_took() {
  grep -m1 -o "$2 [^\"]*" "$1" | sed -e "s/^$2 //" -e 's/ hours\?/h/; s/ minutes\?/m/; s/ seconds\?/s/; s/ //g' |
    awk 'BEGIN { t = -1 } { t = 0; s = $0
      while (match(s, /^[0-9.]+(ms|µs|ns|h|m|s)/)) {
        tok = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1); u = tok; sub(/^[0-9.]+/, "", u)
        t += (tok + 0) * (u == "h" ? 3600000 : u == "m" ? 60000 : u == "s" ? 1000 : u == "ms" ? 1 : u == "ns" ? 0.000001 : 0.001)
      } } END { printf "%d\n", t }'
}

# Timed on a settled cluster: the namespaces earlier scenarios deleted
# (their pods stopping) gone first, for at most 120 s.
settle_ms=$(ms)
for _ in $(seq 240); do
  [[ -n $(kubectl get ns --no-headers 2>/dev/null | awk '$2 == "Terminating"') ]] || break
  sleep 0.5
done
settle_ms=$(($(ms) - settle_ms))
# What else takes the machine's CPU meanwhile (top every 2 s): printed,
# averaged by command, when the edits miss their bounds.
top -b -d 2 -o %CPU -w 200 >"$CLUSTER_DIR/logs/skaffold-top.log" 2>/dev/null &
top_pid=$!

# 1. skaffold dev: the first deploy, then five edits. --cleanup=false: the
# debug session below upgrades the same release, and uninstalls it.
log=$CLUSTER_DIR/logs/skaffold-dev.log
t=$(ms)
sk_dev "$log" test-cluster --cleanup=false --port-forward=off
dev_ok=0
build_ms=-1 helm_ms=-1 stable_ms=-1
if sk_watching "$log"; then
  dev_ms=$(($(ms) - t))
  # The image build, the helm install (the hooks before the release's
  # objects: the secrets Job), and the wait for the pods to be ready.
  build_ms=$(sk_took "$log" "Build completed in") stable_ms=$(sk_took "$log" "Deployments stabilized in")
  helm_ms=$(($(sk_took "$log" "Deploy completed in") - stable_ms))
  # The pods are Ready when skaffold watches; the Service's address
  # answers once kube-proxy has written their endpoints (its sync lags the
  # endpoints by up to a second or so): polled for 10 s, not asked once.
  t_watch=$((${EPOCHREALTIME/./} / 1000)) answer_ms=-1
  sk_served "no such path" 10000
  ((sk_at < 0)) || answer_ms=$((sk_at - t_watch))
  if ((answer_ms < 0)); then
    fail "skaffold dev: the first deploy does not answer within 10s of skaffold watching: '$sk_last'"
  else
    dev_ok=1
  fi
else
  dev_ms=-1
  fail "skaffold dev did not get to watching within 300s"; tail -n 30 "$log"
fi
# edit_series FIRST: five edits (numbered from FIRST) saved one after the
# other, each timed from the save to the new code answering, into edits;
# edits is emptied when one is not served.
edit_series() {
  local n marker saved
  edits=() builds=()
  for n in $(seq "$1" "$(($1 + 4))"); do
    marker="edit $n of the skaffold scenario"
    saved=$((${EPOCHREALTIME/./} / 1000))
    sed -i "s|no such path[^\"]*: see /openapi.yaml|no such path ($marker): see /openapi.yaml|" "$src/internal/httpapi/router.go"
    sk_served "$marker" 120000
    if ((sk_at < 0)); then
      fail "skaffold dev: edit $n not served within 120s (last answer: $sk_last)"; grep -v '^\[plantstore\]' "$log" | tail -n 20
      edits=()
      return
    fi
    edits+=($((sk_at - saved)))
    # Of that, until the binary the sync sends was written: skaffold seeing
    # the save, then the host's go build.
    builds+=($(($(date -r "$src/bin/dev/plantstore" +%s%3N) - saved)))
    # The loop is back to watching before the next save.
    sleep 0.5
  done
}
# series_figures: median and max of edits (-1 -1 without five).
series_figures() {
  if ((${#edits[@]} == 5)); then printf '%s\n' "${edits[@]}" | sort -n | awk '{v[NR]=$1} END {print v[3], v[5]}'; else echo -1 -1; fi
}
edits=() builds=() series=0 first_series=''
if ((dev_ok)); then
  # A series over its bounds is timed once more: a build that a busy
  # machine slowed is told from a loop that is slow (both series are).
  edit_series 1
  series=1
  read -r edit_median edit_max < <(series_figures)
  if ((${#edits[@]} == 5)) && ! ((edit_median <= 3000 && edit_max <= 5000)); then
    first_series=$(IFS=,; echo "${edits[*]}")
    edit_series 6
    series=2
  fi
fi
kill -INT "$sk_pid" 2>/dev/null || true
wait "$sk_pid" 2>/dev/null || true
kill "$top_pid" 2>/dev/null || true
# The prober ends when its requests do.
if [[ -n ${SK_PROBE_PID:-} ]]; then
  [[ -z ${SK_PROBE[1]:-} ]] || eval "exec ${SK_PROBE[1]}>&-"
  wait "$SK_PROBE_PID" 2>/dev/null || true
  SK_PROBE_PID=''
fi
# The goal is 20 s on a warm machine; the check fails past 40 s (the image
# path it replaced took 28 s), and says whether the goal held.
if ((dev_ok)); then
  goal=$( ((dev_ms >= 0 && dev_ms <= 20000)) && echo "within its 20s goal" || echo "OVER its 20s goal")
  if ((dev_ms >= 0 && dev_ms <= 40000)); then
    pass "skaffold dev -p test-cluster: development image built, imported and deployed in $(sec "$dev_ms")s, $goal (bound 40s; $( ((build_ms >= 0)) && echo "build $(sec "$build_ms")s" || echo "the image in skaffold's cache"), helm install $(sec "$helm_ms")s, pods ready $(sec "$stable_ms")s later); the API answers through its Service $(sec "$answer_ms")s after"
  else
    fail "skaffold dev -p test-cluster: development image built, imported and deployed in $(sec "$dev_ms")s (bound 40s)"
  fi
fi
read -r edit_median edit_max < <(series_figures)
if ((${#edits[@]} == 5)); then
  list=$(for e in "${edits[@]}"; do printf '%ss ' "$(sec "$e")"; done)
  again=${first_series:+ (a second series: the first, [$first_series] ms, was over its bounds)}
  if ((edit_median <= 3000 && edit_max <= 5000)); then
    pass "skaffold dev: five edits saved -> new code answering: ${list% } (median $(sec "$edit_median")s, bound 3s; max $(sec "$edit_max")s, bound 5s)$again"
  else
    fail "skaffold dev: five edits saved -> new code answering: ${list% } (median $(sec "$edit_median")s, bound 3s; max $(sec "$edit_max")s, bound 5s)$again"
    # The machine's busy time beside the commands': what top sees of no
    # command is short-lived processes (a poller's forks, exec probes).
    awk -v cpus="$(nproc)" -v settle="$settle_ms" '/^%Cpu/ && ++k > 1 { busy += ($2 + $4) * cpus; m++ }
      END { printf "the machine meanwhile (after %dms waiting for deleted namespaces): %.0f%% of one CPU busy on average; the busiest commands (%% of one CPU):\n", settle, m ? busy / m : -1 }' \
      "$CLUSTER_DIR/logs/skaffold-top.log"
    awk '/^top -/ { n++ } /^ *[0-9]+ / { cpu[$12] += $9 } END { for (c in cpu) printf "%6.1f %s\n", cpu[c] / n, c }' \
      "$CLUSTER_DIR/logs/skaffold-top.log" | sort -rn | head -n 12
  fi
  syncs=$(grep -c '^Syncing 1 files' "$log" || true) deploys=$(grep -c '^Starting deploy' "$log" || true)
  ((syncs >= 5 * series && deploys == 1)) || fail "skaffold dev: the edits were not file syncs alone ($syncs syncs, $deploys deploys)"
fi

# 2. The profile debug on the same release: Delve, its port forwarded, a
# breakpoint hit by a request, its value seen, continued.
dbg_ms=-1 bp_ms=-1
if ((dev_ok)); then
  log=$CLUSTER_DIR/logs/skaffold-debug.log
  t=$(ms)
  sk_dev "$log" test-cluster,debug --port-forward=user
  if sk_watching "$log"; then
    dbg_ms=$(($(ms) - t))
    # Skaffold forwards to the port asked for, or to a free one when it is taken.
    dap_port=$(sed -n 's|.*remote port 56268 -> http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | tail -n 1)
    api_port=$(sed -n 's|.*service/plantstore in namespace .*, remote port 8080 -> http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | tail -n 1)
    api_token "$SK_NS" >"$CLUSTER_DIR/skaffold-token"
    file=$src/internal/httpapi/plants.go
    line=$(grep -n 'ctx, cancel := storeContext(r, h.storeTimeout)' "$file" | cut -d: -f1)
    name=dap-fern-$RANDOM
    if out=$("$src/bin/dev/tools/dapcheck" -dap "127.0.0.1:$dap_port" -file "$file" -line "$line" \
      -url "http://127.0.0.1:$api_port/plants" -token-file "$CLUSTER_DIR/skaffold-token" \
      -body "{\"id\": $((RANDOM + 1000)), \"name\": \"$name\"}" -want "$name" 2>&1); then
      bp_ms=$(jq .round_trip_ms <<<"$out")
      pass "skaffold dev -p test-cluster,debug: deployed in $(sec "$dbg_ms")s; a DAP client stopped a create at $(jq -r .stopped_at <<<"$out" | sed "s|$src/||"), saw $(jq -r .variable <<<"$out") = $(jq -r .value <<<"$out"), continued: answered $(jq .status <<<"$out") in $(sec "$bp_ms")s"
    else
      fail "skaffold debug: the DAP client: $out"; grep -v '^\[plantstore\]' "$log" | tail -n 20
    fi
  else
    fail "skaffold dev -p test-cluster,debug did not get to watching within 300s"; tail -n 30 "$log"
  fi
  kill -INT "$sk_pid" 2>/dev/null || true # skaffold dev cleans up (helm uninstall) on Ctrl-C
  wait "$sk_pid" 2>/dev/null || true
fi
figures "skaffold settled_after_ms=$settle_ms dev_first_deploy_ms=$dev_ms first_deploy_build_ms=$build_ms first_deploy_helm_ms=$helm_ms first_deploy_ready_ms=$stable_ms edits_ms=[$(IFS=,; echo "${edits[*]}")] edit_builds_ms=[$(IFS=,; echo "${builds[*]}")] earlier_series_ms=[$first_series] edit_median_ms=$edit_median edit_max_ms=$edit_max debug_deploy_ms=$dbg_ms breakpoint_round_trip_ms=$bp_ms"
kubectl delete namespace "$SK_NS" --wait=false >/dev/null
rm -rf "$src"
