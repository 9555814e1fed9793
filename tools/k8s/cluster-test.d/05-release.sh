# shellcheck shell=bash
# Releases as users get them: `make release` of 1.0.0 and 1.1.0 (from the
# commits CHANGELOG.md names) and of this tree's VERSION into the node's OCI
# registry; each verified with cosign as a user would (and refused under
# another key); then, with Helm 3 from 1.0.0 and with Helm 4 from 1.1.0,
# `helm install` from the registry's OCI chart (no local chart path; the
# kubelet pulls the image by digest through containerd's hosts.toml), plants
# written through the old release, `helm upgrade --reuse-values` refused with
# what to type instead, then `helm upgrade --reset-then-reuse-values` to
# VERSION from the registry under the open-loop create load (no failed
# request; the token the old chart generated kept): the chart's migration Job
# run by the upgrade itself, every old plant readable by GET /plants/{id} and
# listed by GET /plants. With Helm 3 then `helm rollback` to 1.0.0 (creates
# keep working; nothing is lost) and the upgrade again (what 1.0.0 wrote
# meanwhile is migrated too). Helm 4's flow runs beside Helm 3's rollback
# (both mostly wait on the cluster); Helm 3's install is the one that shows
# the kubelet pulling from the registry, so Helm 4's does not drop the nodes'
# images first. docs/release.md describes what is published and how to
# verify it.

RELEASE_REGISTRY=$(cat "$CLUSTER_DIR/registry-address")/plantstore
CHART_OCI=oci://$RELEASE_REGISTRY/charts/plantstore
NOW=$(cat "$REPO/VERSION")
OLD_RELEASES=(1.0.0 1.1.0)
# The older releases for the nodes' platform alone: they are installed and
# verified here, never checked as releases; make release-check below builds
# and checks every platform of this tree's with the same pipeline.
OLD_PLATFORMS=$(go env GOARCH)
RELDIR=$CLUSTER_DIR/release
mkdir -p "$RELDIR"
export COSIGN_KEY=$RELDIR/cosign.key COSIGN_PUB=$RELDIR/cosign.pub

# release_commit V: the commit CHANGELOG.md says release V was built from.
release_commit() {
  awk -v h="## [$1]" 'index($0, h) == 1 { on = 1; next } /^## \[/ { on = 0 } on' "$REPO/CHANGELOG.md" |
    grep -o 'built from commit `[0-9a-f]\{40\}`' | grep -o '[0-9a-f]\{40\}' | head -n 1
}

# The older releases never change once made, as for the users who pulled
# them: the run that makes them keeps what it pushed (the registry's storage,
# their release.json files and the key that signed them) in the cluster's
# cache, keyed by their commits and platform, the files of the release and
# image tools (and the module cosign comes from), the Go toolchain and the
# registry's address, and a later run puts that into its fresh registry
# instead of building them again. This tree's release is built and checked
# on every run.
release_cache_key() {
  {
    for v in "${OLD_RELEASES[@]}"; do echo "$v $(release_commit "$v")"; done
    echo "$OLD_PLATFORMS"
    echo "$RELEASE_REGISTRY"
    go version
    (cd "$REPO" && find tools/release tools/image tools/k8s/client-go-0.34/go.mod -type f -print0 | sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -c1-16
}
RELEASE_CACHE_ROOT=$K8S_CACHE/releases
RELEASE_CACHE=$RELEASE_CACHE_ROOT/$(release_cache_key)
# release_cache_save: the older releases, just pushed, into the cache (the
# registry holds nothing else yet).
release_cache_save() {
  local tmp=$RELEASE_CACHE_ROOT/.new-$$ v
  rm -rf "$RELEASE_CACHE_ROOT" && mkdir -p "$tmp"
  cp -a "$CLUSTER_DIR/registry" "$tmp/registry"
  cp "$RELDIR/cosign.key" "$RELDIR/cosign.pub" "$tmp/"
  for v in "${OLD_RELEASES[@]}"; do mkdir -p "$tmp/$v" && cp "$RELDIR/$v/release.json" "$tmp/$v/"; done
  mv "$tmp" "$RELEASE_CACHE"
}

declare -A RELEASED_DIGEST
stage "make release ${OLD_RELEASES[*]} (the commits CHANGELOG.md names; kept from an earlier run when it made them from the same files) and make release-check $NOW (this tree) into the node's registry $RELEASE_REGISTRY"
[[ " ${OLD_RELEASES[*]} " != *" $NOW "* ]] || { fail "VERSION is $NOW, a release already made: make version-set first"; exit 1; }
to_build=("${OLD_RELEASES[@]}" "$NOW")
if [[ -d $RELEASE_CACHE ]]; then
  cp -a "$RELEASE_CACHE/registry/." "$CLUSTER_DIR/registry/"
  cp "$RELEASE_CACHE/cosign.key" "$RELEASE_CACHE/cosign.pub" "$RELDIR/"
  for v in "${OLD_RELEASES[@]}"; do
    mkdir -p "$RELDIR/$v" && cp "$RELEASE_CACHE/$v/release.json" "$RELDIR/$v/"
    RELEASED_DIGEST[$v]=$(jq -r .image.digest "$RELDIR/$v/release.json")
    pass "release $v as an earlier run made it (cache ${RELEASE_CACHE##*/}): image index ${RELEASED_DIGEST[$v]}, chart $(jq -r .chart.digest "$RELDIR/$v/release.json")"
    figures "release version=$v cached=yes revision=$(jq -r '.revision[:12]' "$RELDIR/$v/release.json") image=$RELEASE_REGISTRY/plantstore@${RELEASED_DIGEST[$v]}"
  done
  to_build=("$NOW")
fi
for v in "${to_build[@]}"; do
  [[ $v != "$NOW" ]] || continue
  commit=$(release_commit "$v")
  [[ -n $commit ]] || { fail "CHANGELOG.md names no commit for $v"; exit 1; }
  rm -rf "$RELDIR/src-$v"
  # A clone of its own (cyclonedx-gomod reads the commit with go-git, which
  # does not follow a shared clone's alternates).
  git clone -q --no-checkout "$REPO" "$RELDIR/src-$v"
  git -C "$RELDIR/src-$v" checkout -q --detach "$commit"
done
# This tree's release goes through make release-check against this
# registry (built twice for the same digests, verified, an unsigned and a
# tampered copy refused): CI's release proof, run here so that the release
# it checked is the one installed below, not a second build.
for v in "${to_build[@]}"; do
  release=(env PLATFORMS="$OLD_PLATFORMS" "$REPO/tools/release/release.sh") src=$RELDIR/src-$v
  if [[ $v == "$NOW" ]]; then
    release=(env CHECK_REGISTRY="${RELEASE_REGISTRY%/plantstore}" "$REPO/tools/release/check.sh") src=$REPO
    ((${#to_build[@]} == 1)) || release_cache_save
  fi
  t=$SECONDS
  if VERSION=$v SRC=$src REGISTRY=$RELEASE_REGISTRY RELEASE_DIR=$RELDIR/$v HELM=helm \
    "${release[@]}" >"$CLUSTER_DIR/logs/release-$v.log" 2>&1; then
    RELEASED_DIGEST[$v]=$(jq -r .image.digest "$RELDIR/$v/release.json")
    pass "make release $v in $((SECONDS - t))s: image index ${RELEASED_DIGEST[$v]} ($(jq -r '[.image.platforms[].platform] | join(", ")' "$RELDIR/$v/release.json")), chart $(jq -r .chart.digest "$RELDIR/$v/release.json")"
    figures "release version=$v seconds=$((SECONDS - t)) $(grep '^RELEASE ' "$CLUSTER_DIR/logs/release-$v.log" | sed 's/^RELEASE //; s/version=[^ ]* //; s/seconds=[^ ]*//')"
    if [[ $v == "$NOW" ]]; then
      check=$(grep '^RELEASE-CHECK ' "$CLUSTER_DIR/logs/release-$v.log" | sed 's/^RELEASE-CHECK //')
      figures "release-check $check"
      if [[ $check == *"refused=2/2"* && $check =~ reproducible=([0-9]+)/([0-9]+) && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
        pass "make release-check $v: every platform and the index built twice to the same digests, verified, an unsigned and a tampered copy refused"
      else
        fail "make release-check $v: $check"
      fi
    fi
  else
    fail "make release $v"; grep -v '^go: downloading' "$CLUSTER_DIR/logs/release-$v.log" | tail -n 30
    exit 1
  fi
done

stage "verify every release before installing it: signatures, SBOMs, provenance, the chart's image pin"
for v in "${OLD_RELEASES[@]}" "$NOW"; do
  if HELM=helm "$REPO/tools/release/verify.sh" "$RELEASE_REGISTRY" "$v" >"$CLUSTER_DIR/logs/verify-$v.log" 2>&1; then
    pass "$v verified: $(grep '^VERIFY ' "$CLUSTER_DIR/logs/verify-$v.log" | sed 's/^VERIFY //')"
    figures "verify $(grep '^VERIFY ' "$CLUSTER_DIR/logs/verify-$v.log" | sed 's/^VERIFY //')"
  else
    fail "$v did not verify"; tail -n 15 "$CLUSTER_DIR/logs/verify-$v.log"
  fi
done
# Another key must not verify what this one signed.
rm -rf "$RELDIR/other-key" && mkdir -p "$RELDIR/other-key"
(cd "$RELDIR/other-key" && COSIGN_PASSWORD='' "$REPO/bin/tools/cosign" generate-key-pair >/dev/null 2>&1)
if COSIGN_PUB=$RELDIR/other-key/cosign.pub HELM=helm "$REPO/tools/release/verify.sh" "$RELEASE_REGISTRY" "$NOW" >"$CLUSTER_DIR/logs/verify-other-key.log" 2>&1; then
  fail "$NOW verified under a key that never signed it"
else
  pass "$NOW refused under another key: $(grep -m1 'verify: FAIL' "$CLUSTER_DIR/logs/verify-other-key.log" | sed 's/^verify: FAIL //')"
fi

# The releases are made and checked: from here on the scenarios load the
# cluster (CLUSTER_WAIT_FOR, .ci/run).
wait_go

# api_images NS: the image ids the API pods run, one a line (pods still
# terminating after a rollout are not counted).
api_images() {
  kubectl get pods -n "$1" -l app.kubernetes.io/component=api -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .status.containerStatuses[0].imageID' | sort -u
}
redis_uid() { kubectl get pod -n "$1" "$REL-redis-0" -o jsonpath='{.metadata.uid}'; }
# drop_registry_images: the node forgets the images it pulled from the
# registry, so that the next install has to pull them again.
drop_registry_images() {
  local ctr refs sock
  for sock in $("$CLUSTER" nodes | awk '{print $4}'); do
    ctr=(ctr --address "$sock" -n k8s.io)
    refs=$("${ctr[@]}" images ls -q | grep "^$RELEASE_REGISTRY/" || true)
    [[ -z $refs ]] || "${ctr[@]}" images rm $refs >/dev/null
  done
}

# runs_release NS VERSION WHAT: PASS when every API pod runs VERSION's image index from the registry.
runs_release() {
  local ns=$1 v=$2 what=$3 ids
  ids=$(api_images "$ns")
  if [[ $ids == "$RELEASE_REGISTRY/plantstore@${RELEASED_DIGEST[$v]}" ]]; then
    pass "$what: every API pod runs $RELEASE_REGISTRY/plantstore@${RELEASED_DIGEST[$v]}"
  else
    fail "$what: API pods run [$(echo "$ids" | tr '\n' ' ')], want $RELEASE_REGISTRY/plantstore@${RELEASED_DIGEST[$v]}"
  fi
}

# create_plants NS FIRST COUNT LABEL: POST COUNT plants with ids FIRST..; prints the number answered 200.
create_plants() {
  local ns=$1 first=$2 count=$3 label=$4 ip token ok=0 i code
  ip=$(kubectl get svc -n "$ns" "$REL" -o jsonpath='{.spec.clusterIP}')
  token=$(api_token "$ns")
  for ((i = first; i < first + count; i++)); do
    code=$(node_curl -o /dev/null -w '%{http_code}' -X POST "http://$ip:8080/plants" -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/json' -d "{\"id\": $i, \"name\": \"$label-$i\"}")
    [[ $code != 200 ]] || ok=$((ok + 1))
  done
  echo "$ok"
}

# check_plants NS FIRST COUNT LABEL: each plant readable by GET /plants/{id}
# with the name it was created with, and every one listed by GET /plants.
# Prints "read=N listed=N pages=N".
check_plants() {
  local ns=$1 first=$2 count=$3 label=$4 ip token read=0 i body next pages=0
  ip=$(kubectl get svc -n "$ns" "$REL" -o jsonpath='{.spec.clusterIP}')
  token=$(api_token "$ns")
  for ((i = first; i < first + count; i++)); do
    body=$(node_curl "http://$ip:8080/plants/$i" -H "Authorization: Bearer $token")
    [[ $(jq -r '.name // empty' <<<"$body" 2>/dev/null) != "$label-$i" ]] || read=$((read + 1))
  done
  : >"$RELDIR/listed-$ns"
  next="/plants?limit=100"
  while [[ -n $next ]] && ((pages < 2000)); do
    node_curl -D "$RELDIR/headers-$ns" -o "$RELDIR/page-$ns.json" "http://$ip:8080$next" -H "Authorization: Bearer $token"
    jq -r '.[].id' "$RELDIR/page-$ns.json" >>"$RELDIR/listed-$ns" 2>/dev/null || break
    next=$(tr -d '\r' <"$RELDIR/headers-$ns" | sed -n 's/^[Ll]ink: <\([^>]*\)>; *rel="next".*/\1/p')
    pages=$((pages + 1))
  done
  local listed
  listed=$(awk -v a="$first" -v b="$((first + count))" '$1 >= a && $1 < b' "$RELDIR/listed-$ns" | sort -u | wc -l)
  echo "read=$read listed=$listed pages=$pages"
}

# release_flow HELM NS FROM LOAD_SECONDS ROLLBACK [BEFORE_ROLLBACK]: the
# user's path with one Helm, from release FROM to VERSION under LOAD_SECONDS
# of load. With ROLLBACK 0 it runs beside another flow: the nodes' images
# stay (the other flow's pods use them) and the pull from the registry is
# that flow's proof. BEFORE_ROLLBACK is called just before the rollback (to
# FROM, revision 1).
release_flow() {
  local helm=$1 ns=$2 from=$3 load_secs=$4 rollback=$5 before_rollback=${6:-} hv t t2 s out wrote v1_first
  hv=$($helm version --template '{{.Version}}' 2>/dev/null || $helm version --short)
  restricted_ns "$ns"
  ((!rollback)) || drop_registry_images
  v1_first=$((900000000 + ${#ns} * 100000))

  stage "$hv: helm install $CHART_OCI --version $from (the kubelet pulls the image from the registry)"
  t=$SECONDS
  logged "$ns-install" "$hv: helm install of $from from $CHART_OCI" \
    $helm install "$REL" "$CHART_OCI" --version "$from" --plain-http -n "$ns" "${LOCAL_IMAGES[@]}" --wait --timeout 240s || return 0
  pass "$hv: $from installed from the registry's OCI chart in $((SECONDS - t))s"
  runs_release "$ns" "$from" "$hv install"
  local pulled
  pulled=$(kubectl get events -n "$ns" --field-selector reason=Pulled -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
    grep -cE "^Successfully pulled image \"$RELEASE_REGISTRY/plantstore(:[^@\"]+)?@${RELEASED_DIGEST[$from]}\"" || true)
  figures "install-from-registry helm=$hv version=$from chart=$CHART_OCI seconds=$((SECONDS - t)) pulled_by_digest=$pulled image=${RELEASED_DIGEST[$from]}"
  if ((rollback)); then
    if ((pulled >= 1)); then pass "$hv: the kubelet pulled $RELEASE_REGISTRY/plantstore@${RELEASED_DIGEST[$from]} ($pulled pull events)"; else fail "$hv: no pull of the $from image from the registry in the events"; fi
  fi

  wrote=$(create_plants "$ns" "$v1_first" 200 v1)
  if ((wrote == 200)); then pass "$hv: 200 plants written through $from"; else fail "$hv: $wrote of 200 creates through $from answered 200"; fi

  stage "$hv: helm upgrade --reuse-values refused, then --reset-then-reuse-values to $NOW from the registry under $RATE creates/s"
  # --reuse-values renders the new chart with the old chart's defaults: the chart
  # must stop before changing anything and say what to type instead.
  if $helm upgrade "$REL" "$CHART_OCI" --version "$NOW" --plain-http -n "$ns" --reuse-values --timeout 60s \
    >"$CLUSTER_DIR/logs/$ns-reuse-values.log" 2>&1; then
    fail "$hv: helm upgrade --reuse-values from $from went through with $from's defaults"
  elif grep -q "older chart's.*--reset-then-reuse-values" "$CLUSTER_DIR/logs/$ns-reuse-values.log" &&
    [[ $($helm history "$REL" -n "$ns" -o json | jq length) == 1 ]]; then
    pass "$hv: helm upgrade --reuse-values from $from refused before any change (still revision 1): $(grep -o "these values are an older chart's[^:]*" "$CLUSTER_DIR/logs/$ns-reuse-values.log" | head -n 1)"
  else
    fail "$hv: helm upgrade --reuse-values from $from failed otherwise"; tail -n 5 "$CLUSTER_DIR/logs/$ns-reuse-values.log"
  fi
  local redis_before token_before
  redis_before=$(redis_uid "$ns")
  token_before=$(api_token "$ns")
  load_start "$ns" load-upgrade "$load_secs" "http://$REL:8080" "$REL-tokens"
  sleep 5
  t=$(ms)
  # The install's values (the node's images) come back from the release.
  logged "$ns-upgrade" "$hv: helm upgrade --reset-then-reuse-values to $NOW" \
    $helm upgrade "$REL" "$CHART_OCI" --version "$NOW" --plain-http -n "$ns" --reset-then-reuse-values --wait --timeout 300s || true
  t2=$(ms)
  # 3 s more of the load past the upgrade, then its check: the bound given
  # the load is for a slow upgrade.
  sleep 3
  load_stop "$ns" load-upgrade
  s=$(load_result "$ns" load-upgrade) || s='{}'
  # The new chart's Redis spec differs from the old one's (its redis.conf,
  # 1.0.0's version labels): the upgrade restarts the one server, and creates
  # answer 503 with Retry-After while it is away.
  local restarted=no window_ms
  [[ $(redis_uid "$ns") == "$redis_before" ]] || restarted=yes
  window_ms=$(window_503_ms "$s")
  figures "upgrade-redis helm=$hv from=$from redis_restarted=$restarted unavailable_503=$(jq .Unavailable <<<"$s") window_503_ms=$window_ms"
  if load_verdict "upgrade-$from-to-$NOW-$hv" "$s" 1 && ((window_ms <= REDIS_RESTART_503_MS)); then
    if covered "$s" "$t" "$t2"; then
      pass "$hv: upgrade $from → $NOW ($(((t2 - t) / 1000))s, the migration Job included) under load: every create 200 or, while the chart's Redis restarted (restarted: $restarted), 503 with Retry-After ($(jq .Unavailable <<<"$s") over ${window_ms}ms), no transport error, every acknowledged plant stored"
    else
      fail "$hv: the load did not cover the whole upgrade ($t..$t2 vs $(jq -c '[.Start,.End]' <<<"$s"))"
    fi
  else
    fail "$hv: upgrade $from → $NOW under load: failed requests, or 503s over ${window_ms}ms (bound ${REDIS_RESTART_503_MS}ms)"
  fi
  runs_release "$ns" "$NOW" "$hv upgrade"
  # The old charts rendered the tokens Secret; this one does not: the
  # secrets hook annotated it to stay, with its value.
  if [[ -n $token_before && $(api_token "$ns") == "$token_before" ]]; then
    pass "$hv: the token $from's chart generated is the same after the upgrade (its Secret kept, not deleted by Helm)"
  else
    fail "$hv: the $from token did not survive the upgrade"
  fi
  out=$(check_plants "$ns" "$v1_first" 200 v1)
  figures "upgrade helm=$hv from=$from to=$NOW seconds=$(((t2 - t) / 1000)) v1_plants=200 $out"
  if [[ $out == "read=200 listed=200 "* ]]; then
    pass "$hv: every $from plant readable by GET /plants/{id} and listed by GET /plants after the upgrade ($out)"
  else
    fail "$hv: $from plants after the upgrade: $out of 200"
  fi

  ((rollback)) || return 0
  [[ -z $before_rollback ]] || "$before_rollback"
  stage "$hv: helm rollback to $from, creates through it, and the upgrade again"
  t=$SECONDS
  # As the chart README's Upgrading says: the old charts rendered the tokens
  # and Redis password Secrets, which this chart keeps outside the release;
  # Helm's rollback will not take over an object its current revision does
  # not hold, so they go first, and the rollback writes them again with the
  # same values (revision 1 holds them).
  kubectl delete secret -n "$ns" "$REL-tokens" "$REL-redis" >/dev/null
  logged "$ns-rollback" "$hv: helm rollback" $helm rollback "$REL" 1 -n "$ns" --wait --timeout 240s || return 0
  pass "$hv: helm rollback to revision 1 ($from) in $((SECONDS - t))s"
  runs_release "$ns" "$from" "$hv rollback"
  if [[ $(api_token "$ns") == "$token_before" ]]; then
    pass "$hv: after the rollback the token is the one $from generated"
  else
    fail "$hv: the rollback changed the token"
  fi
  wrote=$(create_plants "$ns" "$((v1_first + 1000))" 50 rb)
  if ((wrote == 50)); then pass "$hv: 50 plants written through $from after the rollback"; else fail "$hv: $wrote of 50 creates after the rollback answered 200"; fi
  t=$SECONDS
  logged "$ns-upgrade2" "$hv: the second upgrade to $NOW" \
    $helm upgrade "$REL" "$CHART_OCI" --version "$NOW" --plain-http -n "$ns" "${LOCAL_IMAGES[@]}" --wait --timeout 300s || true
  local first second
  first=$(check_plants "$ns" "$v1_first" 200 v1)
  second=$(check_plants "$ns" "$((v1_first + 1000))" 50 rb)
  figures "rollback helm=$hv to=$from creates_after=$wrote upgrade_again_seconds=$((SECONDS - t)) v1_plants[$first] rollback_plants[$second]"
  if [[ $first == "read=200 listed=200 "* && $second == "read=50 listed=50 "* ]]; then
    pass "$hv: after rollback and upgrade again, every plant readable and listed: the $from batch ($first), the rollback's ($second)"
  else
    fail "$hv: after rollback and upgrade again: $from batch $first of 200, rollback's $second of 50"
  fi
}

# From 1.1.0 nothing is migrated and the Job settles 2 s: the upgrade takes
# about 25 s. From 1.0.0 it settles 35 s: 50-55 s.
helm4_flow() {
  release_flow "$BIN/helm4" release-helm4 1.1.0 45 0
  kubectl delete namespace release-helm4 --wait=false >/dev/null
}
helm4_beside() {
  # Built in the background since the cluster's start (late tools): what is
  # left of that build, if anything.
  node_tools "$CLUSTER_DIR/logs/helm4-build.log" helm4 >/dev/null || true
  if [[ -x $BIN/helm4 ]]; then
    beside release-helm4 helm4_flow
  else
    fail "no helm4 in $BIN (tools/k8s/build.sh helm4: $CLUSTER_DIR/logs/helm4-build.log)"
  fi
}
release_flow helm release-helm3 1.0.0 85 1 helm4_beside
kubectl delete namespace release-helm3 --timeout=120s >/dev/null
joined release-helm4
