# shellcheck shell=bash
# runs beside the next scenario (Helm and server-side apply in namespaces of
# its own, one load of its own: see beside in cluster-test.sh).
# The chart as GitOps tools apply it, and the Secrets it generates kept
# through everything a release goes through.
# 1. As Argo CD syncs it: rendered with `helm template` (no cluster to look
#    up), its Helm hooks mapped to Argo CD's phases and waves
#    (cmd/k8s-gitops-phases), every step applied with server-side apply, the
#    hooks deleted by their policies. Two syncs of the same values: the same
#    bytes rendered, a create works after each, the token and the Redis
#    password unchanged, no pod replaced and no Deployment or StatefulSet
#    changed by the second.
# 2. A sync from 1.0.0 (its chart from 05-release.sh's registry) to this
#    tree's chart under the create load: the chart renders as an install
#    there, yet its migration Job settles the grace period once it finds
#    1.0.0 keys, so what the draining 1.0.0 pods wrote is moved too: every
#    acknowledged plant readable after the sync, no 1.0.0 key left.
# 3. With Helm: install, upgrade, rollback, uninstall and install again: the
#    generated token and Redis password the same throughout, and the plants
#    written before the uninstall readable after the reinstall (the PVC and
#    the password outlive the release).

GITOPS_NS=gitops
GITOPS_VALUES=("${APP_IMAGE[@]}")

# gitops_state NS: what a sync that changes nothing must leave alone: the
# token, the Redis password, the pods (UIDs) and the workloads' generations.
gitops_state() {
  echo "token=$(secret_digest "$1" "$REL-tokens" tokens)"
  echo "password=$(secret_digest "$1" "$REL-redis" redis-password)"
  kubectl get pods -n "$1" -l "app.kubernetes.io/instance=$REL,app.kubernetes.io/component in (api,redis)" -o jsonpath='{range .items[*]}pod={.metadata.name}/{.metadata.uid}{"\n"}{end}' | sort
  kubectl get deployment,statefulset -n "$1" -o jsonpath='{range .items[*]}{.kind}={.metadata.name}/generation={.metadata.generation}{"\n"}{end}' | sort
}
# argo_sync NS N [CHART VALUES...]: one sync as Argo CD runs it (of this
# tree's chart and GITOPS_VALUES by default); prints the rendered file. Each
# hook Job's log is kept in the sync's directory.
argo_sync() {
  local ns=$1 dir=$CLUSTER_DIR/gitops/sync-$2 file phase wave policies hooks=() jobs j chart=${3:-$CHART} values
  values=("${GITOPS_VALUES[@]}")
  (($# <= 3)) || values=("${@:4}")
  rm -rf "$dir" && mkdir -p "$dir"
  helm template "$REL" "$chart" -n "$ns" "${values[@]}" >"$dir/rendered.yaml" || return 1
  k8s-gitops-phases -out "$dir/steps" <"$dir/rendered.yaml" >"$dir/plan" || return 1
  while IFS=$'\t' read -r file phase wave policies; do
    if [[ $phase != Sync && $policies == *BeforeHookCreation* ]]; then
      kubectl delete -n "$ns" -f "$file" --ignore-not-found --wait=true >/dev/null || return 1
    fi
    kubectl apply -n "$ns" --server-side --field-manager=argocd-controller --force-conflicts -f "$file" >"$dir/apply-$phase-$wave.log" || return 1
    if [[ $phase != Sync ]]; then
      # A hook step is done when its Jobs are.
      jobs=$(kubectl get -n "$ns" -f "$file" -o name | grep '^job' || true)
      for j in $jobs; do
        kubectl wait -n "$ns" --for=condition=Complete "$j" --timeout=180s >/dev/null || { kubectl logs -n "$ns" "$j" | tail -n 5; return 1; }
        kubectl logs -n "$ns" "$j" >"$dir/${j#job*/}.log" 2>&1 || true
      done
      [[ $policies != *HookSucceeded* ]] || hooks+=("$file")
    else
      kubectl rollout status -n "$ns" deployment/"$REL" --timeout=180s >/dev/null || return 1
      kubectl rollout status -n "$ns" statefulset/"$REL-redis" --timeout=180s >/dev/null || return 1
    fi
  done <"$dir/plan"
  local h
  for h in "${hooks[@]}"; do kubectl delete -n "$ns" -f "$h" --ignore-not-found --wait=false >/dev/null; done
  echo "$dir/rendered.yaml"
}

# gitops_from_v1: a sync of the 1.0.0 chart, then of this one under load
# (point 2 above); it runs beside the rest of this file, in namespaces of
# its own, and is joined at its end.
gitops_from_v1() {
  stage "GitOps: a sync from 1.0.0 to this chart under $RATE creates/s while 1.0.0 pods drain"
  V1_NS=gitops-v1
  if [[ -z ${RELEASED_DIGEST[1.0.0]:-} ]]; then
    fail "the sync from 1.0.0 needs 1.0.0's release in the node's registry: run 05-release.sh first (CLUSTER_SCENARIOS='^(05|12)')"
  else
    restricted_ns "$V1_NS"
    rm -rf "$CLUSTER_DIR/gitops/chart-1.0.0" && mkdir -p "$CLUSTER_DIR/gitops/chart-1.0.0"
    helm pull "$CHART_OCI" --version 1.0.0 --plain-http --untar -d "$CLUSTER_DIR/gitops/chart-1.0.0" >/dev/null
    t=$SECONDS
    if argo_sync "$V1_NS" v1 "$CLUSTER_DIR/gitops/chart-1.0.0/plantstore" "${LOCAL_IMAGES[@]}" >/dev/null; then
      pass "a sync of the 1.0.0 chart in $((SECONDS - t))s"
      v1_first=930000000
      wrote=$(create_plants "$V1_NS" "$v1_first" 200 v1)
      # The load runs until 3 s after the sync's end (load_stop), however
      # long a busy machine makes the sync (72 s once, past a 75 s load).
      load_start "$V1_NS" load-sync 240 "http://$REL:8080" "$REL-tokens"
      sleep 5
      t=$(ms)
      argo_sync "$V1_NS" v1-to-now >/dev/null || fail "the sync from 1.0.0 to this chart"
      t2=$(ms)
      sleep 3
      load_stop "$V1_NS" load-sync
      s=$(load_result "$V1_NS" load-sync) || s='{}'
      out=$(check_plants "$V1_NS" "$v1_first" 200 v1)
      report=$(grep -h '^migrate-store: [0-9]' "$CLUSTER_DIR/gitops/sync-v1-to-now/"*migrate*.log 2>/dev/null || true)
      passes_found=$(grep -h -c '^migrate-store: pass ' "$CLUSTER_DIR/gitops/sync-v1-to-now/"*migrate*.log 2>/dev/null || echo 0)
      left=$(kubectl exec -n "$V1_NS" "$REL-redis-0" -c redis -- sh -c 'REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli --scan --pattern "plantstore:plant:{*}" | wc -l' 2>/dev/null || echo '?')
      figures "gitops-from-1.0.0 sync_seconds=$(((t2 - t) / 1000)) v1_written=$wrote v1_plants[$out] passes_that_found_keys=$passes_found v1_keys_left=$left migrate=[${report#migrate-store: }]"
      # The sync restarts the chart's Redis (its spec changed): 503s with Retry-After meanwhile.
      if load_verdict "gitops-from-1.0.0" "$s" 1 && covered "$s" "$t" "$t2"; then
        pass "sync 1.0.0 → $(cat "$REPO/VERSION") ($(((t2 - t) / 1000))s) under load: every create 200 or, while Redis restarted, 503 with Retry-After ($(jq .Unavailable <<<"$s")), every acknowledged plant readable after it, those the draining 1.0.0 pods wrote included"
      else
        fail "sync 1.0.0 → this chart under load: failed requests, a plant not readable, or a load shorter than the sync ($t..$t2 vs $(jq -c '[.Start,.End]' <<<"$s"))"
      fi
      if [[ $wrote == 200 && $out == "read=200 listed=200 "* && $left == 0 && $report == *"settled: no new 1.0.0 key for 35s"* ]]; then
        pass "the migration Job settled 35 s, not an install's 2 s, once it found 1.0.0 keys: 0 left; the 200 written through 1.0.0 read and listed ($out)"
      else
        fail "after the sync from 1.0.0: written $wrote, $out, 1.0.0 keys left $left, the Job said: $report"
      fi
    else
      fail "a sync of the 1.0.0 chart"
    fi
    kubectl delete namespace "$V1_NS" --wait=false >/dev/null
  fi
}
beside gitops-from-1.0.0 gitops_from_v1

stage "GitOps: two syncs as Argo CD applies the chart (helm template, hooks as phases, server-side apply)"
restricted_ns "$GITOPS_NS"
t=$SECONDS
if r1=$(argo_sync "$GITOPS_NS" 1); then
  pass "first sync in $((SECONDS - t))s: $(grep -c . "$CLUSTER_DIR/gitops/sync-1/plan") steps ($(cut -f2,3 "$CLUSTER_DIR/gitops/sync-1/plan" | tr '\t\n' ': '))"
else
  fail "first sync"; r1=''
fi
code1=$(node_plant "$GITOPS_NS" POST 710001) || true
before=$(gitops_state "$GITOPS_NS")
sleep 2
t=$SECONDS
if r2=$(argo_sync "$GITOPS_NS" 2); then pass "second sync in $((SECONDS - t))s"; else fail "second sync"; r2=''; fi
code2=$(node_plant "$GITOPS_NS" POST 710002) || true
after=$(gitops_state "$GITOPS_NS")
same_render=no
[[ -n $r1 && -n $r2 ]] && cmp -s "$r1" "$r2" && same_render=yes
changed=$(diff <(echo "$before") <(echo "$after") | grep -c '^>' || true)
figures "gitops-argo syncs=2 same_render=$same_render create_after_sync1=$code1 create_after_sync2=$code2 changed_by_sync2=$changed pods=$(grep -c '^pod=' <<<"$after")"
if [[ $same_render == yes ]]; then pass "helm template rendered the same bytes for both syncs"; else fail "the two syncs rendered different manifests"; fi
if [[ $code1 == 200 && $code2 == 200 ]]; then pass "a create after each sync: 200, 200"; else fail "creates after the syncs: $code1, $code2"; fi
if ((changed == 0)) && grep -q '^token=' <<<"$after"; then
  pass "the second sync changed nothing: token, Redis password, $(grep -c '^pod=' <<<"$after") pods (UIDs) and the workloads' generations as before"
else
  fail "the second sync changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | tr '\n' ' ')"
fi
kubectl delete namespace "$GITOPS_NS" --wait=false >/dev/null


stage "GitOps: the generated Secrets through helm install, upgrade, rollback, uninstall and install again"
HK_NS=gitops-helm
restricted_ns "$HK_NS"
declare -A seen=()
step_ok=0 step_n=0
# hk_step NAME CMD...: run a Helm command, then record the token and
# password and create a plant.
hk_step() {
  local name=$1 code; shift
  step_n=$((step_n + 1))
  if ! "$@" >"$CLUSTER_DIR/logs/gitops-helm-$name.log" 2>&1; then
    fail "helm $name"; tail -n 15 "$CLUSTER_DIR/logs/gitops-helm-$name.log"; return
  fi
  seen[$name]="$(gitops_state "$HK_NS" | grep -e '^token=' -e '^password=' | tr '\n' ' ')"
  # After the uninstall there is no Service: curl fails, the code is 000.
  code=$(node_plant "$HK_NS" POST "$((720000 + step_n))") || true
  [[ $code != 200 ]] || step_ok=$((step_ok + 1))
}
hk_step install helm install "$REL" "$CHART" -n "$HK_NS" "${GITOPS_VALUES[@]}" --wait --timeout 240s
hk_step upgrade helm upgrade "$REL" "$CHART" -n "$HK_NS" "${GITOPS_VALUES[@]}" --set-string podAnnotations.step=upgrade --wait --timeout 240s
hk_step rollback helm rollback "$REL" 1 -n "$HK_NS" --wait --timeout 240s
hk_step uninstall helm uninstall "$REL" -n "$HK_NS" --wait --timeout 240s
left=$(kubectl get secrets -n "$HK_NS" -o name | grep -c -e "/$REL-tokens\$" -e "/$REL-redis\$" -e "/$REL-test-reader\$" || true)
hk_step reinstall helm install "$REL" "$CHART" -n "$HK_NS" "${GITOPS_VALUES[@]}" --wait --timeout 240s
old_plant=$(node_plant "$HK_NS" GET 720001) || true
distinct=$(printf '%s\n' "${seen[@]}" | sort -u | grep -c .)
figures "gitops-helm steps=install,upgrade,rollback,uninstall,reinstall creates_ok=$step_ok/$((step_n - 1)) secrets_after_uninstall=$left distinct_token_password=$distinct plant_before_uninstall_after_reinstall=$old_plant"
# The uninstall's create cannot succeed (no Service): step_n - 1 creates.
if ((step_ok == step_n - 1)); then pass "a create after install, upgrade, rollback and the reinstall: all 200"; else fail "creates: $step_ok of $((step_n - 1)) answered 200"; fi
if ((left == 3)); then pass "helm uninstall left the three generated Secrets (resource-policy keep)"; else fail "after helm uninstall $left of 3 generated Secrets left"; fi
if ((distinct == 1)); then pass "token and Redis password the same through install, upgrade, rollback, uninstall and reinstall"; else fail "token/password changed: $(printf '%s=%s; ' "${!seen[@]}" "${seen[@]}")"; fi
if [[ $old_plant == 200 ]]; then pass "the plant written after install is readable after uninstall and reinstall (200)"; else fail "the plant written before the uninstall: $old_plant after the reinstall"; fi

stage "auth.tokens: a token set, then removed from the values, stops opening the API"
tok_a=values-$(hex 16)
helm upgrade "$REL" "$CHART" -n "$HK_NS" "${GITOPS_VALUES[@]}" --set-string "auth.tokens[0]=$tok_a name=from-values" --wait --timeout 240s \
  >"$CLUSTER_DIR/logs/gitops-helm-tokens-set.log" 2>&1 || fail "helm upgrade with auth.tokens"
code_set=$(node_plant "$HK_NS" GET 720001 "$tok_a")
t=$SECONDS
helm upgrade "$REL" "$CHART" -n "$HK_NS" "${GITOPS_VALUES[@]}" --wait --timeout 240s \
  >"$CLUSTER_DIR/logs/gitops-helm-tokens-unset.log" 2>&1 || fail "helm upgrade without auth.tokens"
code_unset=$(node_plant "$HK_NS" GET 720001 "$tok_a")
until [[ $code_unset == 401 ]] || ((SECONDS - t > 150)); do sleep 2; code_unset=$(node_plant "$HK_NS" GET 720001 "$tok_a"); done
revoked_after=$((SECONDS - t))
code_generated=$(node_plant "$HK_NS" GET 720001)
figures "tokens-revoked set=$code_set after_removal=$code_unset seconds_from_upgrade_start=$revoked_after generated_token=$code_generated"
if [[ $code_set == 200 && $code_unset == 401 && $code_generated == 200 ]]; then
  pass "a token of auth.tokens opened the API (200) and, once removed from the values, no longer did (401, ${revoked_after}s from the upgrade's start); the token generated in its place did (200)"
else
  fail "auth.tokens removed: the token answered $code_set while set, $code_unset ${revoked_after}s after the upgrade without it; the generated token $code_generated"
fi
helm uninstall "$REL" -n "$HK_NS" --wait --timeout 120s >/dev/null 2>&1 || true
kubectl delete namespace "$HK_NS" --wait=false >/dev/null
joined gitops-from-1.0.0
