# shellcheck shell=bash
# The chart installed by Flux, as a platform team running Flux delivers it:
# source-controller and helm-controller built from their Go modules
# (tools/k8s/client-go-0.36), their CRDs and RBAC from the modules' own config/, each
# controller on the node in the cluster's network namespace with its own
# ServiceAccount's token (the way 07-admission runs policy-controller: pods
# could neither pull their images nor reach the node's registry on its
# loopback address). This tree's chart is pushed as an OCI artifact to the
# node's registry; an OCIRepository points at it, and a HelmRelease
# (chartRef to it, the test cluster's values from a ConfigMap, the image
# inline, `test.enable: true`) has helm-controller install it and run
# `helm test`. Then: a create through the Service; an upgrade by a changed
# value (a pod annotation) keeps the generated token and Redis password and
# creates still work; a reconcile that changes nothing upgrades nothing and
# replaces or restarts no pod; deleting the HelmRelease uninstalls the
# release. The checks are on behaviour (token, password, creates, pods), not
# on how the chart makes its Secrets.

FLUX_T0=$SECONDS
FLUX_MOD=$TOOLS_MOD/client-go-0.36
FLUX_DIR=$CLUSTER_DIR/flux
FLUX_NS=flux-app
FLUX_REGISTRY=$(cat "$CLUSTER_DIR/registry-address")
# Loopback ports in the cluster's namespace: source-controller's artifact
# server (which helm-controller fetches the chart from), then each
# controller's metrics and health endpoints (their defaults, :8080 and
# :9440 on every address, are taken or too public on the node).
FLUX_STORAGE=127.0.0.1:18790

flux_secrets() { echo "token=$(secret_digest "$FLUX_NS" "$REL-tokens" tokens) password=$(secret_digest "$FLUX_NS" "$REL-redis" redis-password)"; }
# flux_pods: every pod of the release with its UID and restarts.
flux_pods() {
  kubectl get pods -n "$FLUX_NS" -l app.kubernetes.io/instance="$REL" \
    -o jsonpath='{range .items[*]}{.metadata.name}/{.metadata.uid}/restarts={.status.containerStatuses[*].restartCount}{"\n"}{end}' | sort
}
flux_hr() { kubectl get helmrelease -n "$FLUX_NS" "$REL" -o jsonpath="$1" 2>/dev/null; }
# flux_wait_reconciled SECONDS: until the HelmRelease's current generation
# is reconciled and Ready (0), or Stalled / SECONDS passed (1).
flux_wait_reconciled() {
  local until=$((SECONDS + $1)) gen
  while ((SECONDS < until)); do
    gen=$(flux_hr '{.metadata.generation}')
    if [[ -n $gen && $(flux_hr '{.status.observedGeneration}') == "$gen" &&
      $(flux_hr '{.status.conditions[?(@.type=="Reconciling")].status}') != True ]]; then
      [[ $(flux_hr '{.status.conditions[?(@.type=="Ready")].status}') != True ]] || return 0
      [[ $(flux_hr '{.status.conditions[?(@.type=="Stalled")].status}') != True ]] || return 1
    fi
    sleep 0.5
  done
  return 1
}
flux_why() {
  kubectl get helmrelease,ocirepository -n "$FLUX_NS" -o wide 2>&1 | tail -n 4
  flux_hr '{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' | cut -c1-300
  grep -hE '"level":"error"' "$CLUSTER_DIR/logs/helm-controller.log" "$CLUSTER_DIR/logs/source-controller.log" 2>/dev/null | tail -n 3 | cut -c1-400
}
# flux_stop: the controllers of this scenario (or of an earlier run on a
# reused cluster).
flux_stop() { node_stop source-controller helm-controller; }

flux_run() {
  local t bin sc_version hc_version sc_dir hc_dir c version
  stage "Flux: source-controller and helm-controller from their modules, on the node"
  sc_version=$(mod_version "$FLUX_MOD" github.com/fluxcd/source-controller)
  hc_version=$(mod_version "$FLUX_MOD" github.com/fluxcd/helm-controller)
  sc_dir=$(mod_dir "$FLUX_MOD" "github.com/fluxcd/source-controller@$sc_version")
  hc_dir=$(mod_dir "$FLUX_MOD" "github.com/fluxcd/helm-controller@$hc_version")
  [[ -d $sc_dir/config/crd/bases && -d $hc_dir/config/crd/bases ]] || { fail "flux: the controllers' config/ not downloaded ($sc_dir, $hc_dir)"; return; }
  t=$SECONDS
  bin=$(node_tools "$CLUSTER_DIR/logs/flux-build.log" source-controller helm-controller)
  [[ -x $bin/source-controller && -x $bin/helm-controller ]] || { fail "flux: building the controllers"; tail -n 20 "$CLUSTER_DIR/logs/flux-build.log"; return; }
  echo "source-controller $sc_version, helm-controller $hc_version: $bin (built or found in $((SECONDS - t))s)"

  flux_stop
  kubectl delete namespace "$FLUX_NS" source-system helm-system --ignore-not-found --timeout=120s >/dev/null
  rm -rf "$FLUX_DIR" && mkdir -p "$FLUX_DIR"
  # Each module's config/crd and config/rbac as its config/default
  # kustomization puts them (its own namespace; the RBAC bound to that
  # namespace's default ServiceAccount), less the Deployment. kustomize
  # takes a path with an @ for a remote: the modules go by a link.
  t=$SECONDS
  for c in source:"$sc_dir" helm:"$hc_dir"; do
    mkdir -p "$FLUX_DIR/${c%%:*}"
    ln -s "${c#*:}" "$FLUX_DIR/${c%%:*}/module"
    printf 'namespace: %s-system\nresources: [module/config/crd, module/config/rbac]\n' "${c%%:*}" >"$FLUX_DIR/${c%%:*}/kustomization.yaml"
    kubectl create namespace "${c%%:*}-system" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    # Server-side: the CRDs are too large for the last-applied annotation.
    kubectl apply --server-side --force-conflicts -k "$FLUX_DIR/${c%%:*}" >"$CLUSTER_DIR/logs/flux-${c%%:*}-apply.log" 2>&1 ||
      { fail "flux: applying ${c%%:*}-controller's CRDs and RBAC"; tail -n 5 "$CLUSTER_DIR/logs/flux-${c%%:*}-apply.log"; return; }
  done
  kubectl wait --for=condition=Established crd/ocirepositories.source.toolkit.fluxcd.io crd/helmreleases.helm.toolkit.fluxcd.io --timeout=60s >/dev/null

  # Each controller's identity: its namespace's default ServiceAccount.
  local name
  for name in source helm; do
    mkdir -p "$FLUX_DIR/$name/home/tmp" "$FLUX_DIR/$name/data"
    node_kubeconfig "$FLUX_DIR/$name/kubeconfig" "$name-controller" "$name-system" default
  done
  # The arguments of the modules' config/manager Deployments, less leader
  # election (one replica) and with loopback addresses.
  node_start source-controller "$CLUSTER_DIR/logs/source-controller.log" \
    KUBECONFIG="$FLUX_DIR/source/kubeconfig" RUNTIME_NAMESPACE=source-system HOME="$FLUX_DIR/source/home" \
    TMPDIR="$FLUX_DIR/source/home/tmp" TUF_ROOT="$FLUX_DIR/source/home/tmp/.sigstore" \
    "$bin/source-controller" --watch-all-namespaces --log-level=info --log-encoding=json \
    --storage-path="$FLUX_DIR/source/data" --storage-addr="$FLUX_STORAGE" --storage-adv-addr="$FLUX_STORAGE" \
    --metrics-addr=127.0.0.1:18791 --health-addr=127.0.0.1:18792
  local sc_pid=$NODE_PID
  node_start helm-controller "$CLUSTER_DIR/logs/helm-controller.log" \
    KUBECONFIG="$FLUX_DIR/helm/kubeconfig" RUNTIME_NAMESPACE=helm-system HOME="$FLUX_DIR/helm/home" \
    TMPDIR="$FLUX_DIR/helm/home/tmp" \
    "$bin/helm-controller" --watch-all-namespaces --log-level=info --log-encoding=json \
    --metrics-addr=127.0.0.1:18793 --health-addr=127.0.0.1:18794
  local hc_pid=$NODE_PID
  local up=0 i
  for ((i = 0; i < 240; i++)); do
    if nsenter --net="/run/netns/$NETNS" curl -sf -o /dev/null http://127.0.0.1:18792/readyz &&
      nsenter --net="/run/netns/$NETNS" curl -sf -o /dev/null http://127.0.0.1:18794/readyz &&
      nsenter --net="/run/netns/$NETNS" curl -sf -o /dev/null "http://$FLUX_STORAGE/"; then
      up=1; break
    fi
    if ! kill -0 "$sc_pid" 2>/dev/null || ! kill -0 "$hc_pid" 2>/dev/null; then break; fi
    sleep 0.5
  done
  local controllers_s=$((SECONDS - t))
  if ((up)); then
    pass "flux: source-controller $sc_version and helm-controller $hc_version up on the node in ${controllers_s}s (CRDs and RBAC from their modules' config/)"
  else
    fail "flux: the controllers not ready after ${controllers_s}s"
    tail -n 5 "$CLUSTER_DIR/logs/source-controller.log" "$CLUSTER_DIR/logs/helm-controller.log" | cut -c1-400
    return
  fi

  stage "Flux: this tree's chart as an OCI artifact in the node's registry; OCIRepository and HelmRelease"
  version=$(awk '$1 == "version:" {print $2}' "$CHART/Chart.yaml")
  if ! { helm package "$CHART" -d "$FLUX_DIR" && helm push "$FLUX_DIR/plantstore-$version.tgz" "oci://$FLUX_REGISTRY/flux" --plain-http; } \
    >"$CLUSTER_DIR/logs/flux-push.log" 2>&1; then
    fail "flux: helm package and push of the chart"; tail -n 10 "$CLUSTER_DIR/logs/flux-push.log"; return
  fi
  restricted_ns "$FLUX_NS"
  # The test cluster's values file as it is, and the image this run built.
  kubectl create configmap -n "$FLUX_NS" test-cluster-values --from-file=values.yaml="$TOOLS_MOD/test-cluster-values.yaml" >/dev/null
  t=$SECONDS
  kubectl apply -n "$FLUX_NS" -f - >/dev/null <<EOF
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: plantstore}
spec:
  interval: 1h
  url: oci://$FLUX_REGISTRY/flux/plantstore
  ref: {tag: "$version"}
  insecure: true
  # The chart's own layer, as Flux's docs say for Helm charts in OCI.
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
EOF
  if kubectl wait -n "$FLUX_NS" --for=condition=Ready ocirepository/plantstore --timeout=120s >/dev/null; then
    pass "flux: OCIRepository oci://$FLUX_REGISTRY/flux/plantstore:$version Ready in $((SECONDS - t))s (artifact $(kubectl get ocirepository -n "$FLUX_NS" plantstore -o jsonpath='{.status.artifact.digest}' | cut -c1-19)…)"
  else
    fail "flux: OCIRepository not Ready"; flux_why; return
  fi
  local oci_s=$((SECONDS - t))
  t=$SECONDS
  kubectl apply -n "$FLUX_NS" -f - >/dev/null <<EOF
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: $REL}
spec:
  interval: 1h
  releaseName: $REL
  chartRef: {kind: OCIRepository, name: plantstore}
  install: {timeout: 4m}
  upgrade: {timeout: 4m}
  test: {enable: true, timeout: 3m}
  valuesFrom: [{kind: ConfigMap, name: test-cluster-values, valuesKey: values.yaml}]
  values:
    image: {repository: "$IMAGE_REPO", tag: "$TAG"}
EOF
  local ready_s tests
  if flux_wait_reconciled 300; then
    ready_s=$((SECONDS - t))
    tests=$(flux_hr '{.status.history[0].testHooks}' | jq -r '[.[] | .phase] | join(",")' 2>/dev/null)
    if [[ $(flux_hr '{.status.conditions[?(@.type=="TestSuccess")].status}') == True && -n $tests && $tests != *Failed* ]]; then
      pass "flux: HelmRelease Ready in ${ready_s}s: installed by helm-controller (revision $(flux_hr '{.status.history[0].version}'), chart $(flux_hr '{.status.history[0].chartVersion}')) and helm test passed ($tests)"
    else
      fail "flux: HelmRelease Ready but helm test not passed (TestSuccess=$(flux_hr '{.status.conditions[?(@.type=="TestSuccess")].status}'), hooks: $tests)"
    fi
  else
    ready_s=$((SECONDS - t))
    fail "flux: HelmRelease not Ready after ${ready_s}s"; flux_why; return
  fi
  local code1 code2 code3 before after pods1 pods2 gen1 gen2
  code1=$(node_plant "$FLUX_NS" POST 730001)
  before=$(flux_secrets)
  if [[ $code1 == 200 ]]; then pass "flux: a create through the Service with the generated token: 200"; else fail "flux: a create after the install: $code1"; fi

  stage "Flux: an upgrade by a changed value (a pod annotation), then a reconcile that changes nothing"
  t=$SECONDS
  kubectl patch helmrelease -n "$FLUX_NS" "$REL" --type merge -p '{"spec": {"values": {"podAnnotations": {"plantstore.test/flux-step": "upgrade"}}}}' >/dev/null
  local upgrade_s revision
  if flux_wait_reconciled 300; then
    upgrade_s=$((SECONDS - t))
    revision=$(flux_hr '{.status.history[0].version}')
    if [[ $revision == 2 && $(kubectl get deployment -n "$FLUX_NS" "$REL" -o jsonpath='{.spec.template.metadata.annotations.plantstore\.test/flux-step}') == upgrade ]]; then
      pass "flux: the changed value upgraded the release in ${upgrade_s}s (revision 2, the API pods' template carries the annotation; helm test $(flux_hr '{.status.conditions[?(@.type=="TestSuccess")].reason}'))"
    else
      fail "flux: after the changed value: revision $revision, annotation not on the Deployment's pods"
    fi
  else
    upgrade_s=$((SECONDS - t))
    fail "flux: the upgrade not reconciled after ${upgrade_s}s"; flux_why
  fi
  kubectl rollout status -n "$FLUX_NS" "deployment/$REL" --timeout=120s >/dev/null || true
  code2=$(node_plant "$FLUX_NS" POST 730002)
  after=$(flux_secrets)
  if [[ $after == "$before" && $before == token=?*' 'password=?* ]]; then
    pass "flux: the generated token and Redis password unchanged by the upgrade ($before)"
  else
    fail "flux: the upgrade changed the generated Secrets: before [$before], after [$after]"
  fi
  if [[ $code2 == 200 ]]; then pass "flux: a create after the upgrade: 200"; else fail "flux: a create after the upgrade: $code2"; fi

  # A reconcile asked for by hand, as `flux reconcile helmrelease` does.
  pods1=$(flux_pods)
  gen1=$(kubectl get deployment,statefulset -n "$FLUX_NS" -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.generation} {end}')
  sleep 2
  local asked noop_s
  asked=$(date +%s%N)
  t=$SECONDS
  kubectl annotate helmrelease -n "$FLUX_NS" "$REL" --overwrite "reconcile.fluxcd.io/requestedAt=$asked" >/dev/null
  while ((SECONDS - t < 120)) && [[ $(flux_hr '{.status.lastHandledReconcileAt}') != "$asked" ]]; do sleep 0.5; done
  noop_s=$((SECONDS - t))
  sleep 5 # what a reconcile would have rolled has started by now
  pods2=$(flux_pods)
  gen2=$(kubectl get deployment,statefulset -n "$FLUX_NS" -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.generation} {end}')
  code3=$(node_plant "$FLUX_NS" POST 730003)
  echo "$pods2"
  local restarted
  restarted=$(comm -13 <(echo "$pods1") <(echo "$pods2") | grep -c . || true)
  if [[ $(flux_hr '{.status.lastHandledReconcileAt}') != "$asked" ]]; then
    fail "flux: the requested reconcile not handled after ${noop_s}s"; flux_why
  elif [[ $(flux_hr '{.status.history[0].version}') == 2 && $restarted == 0 && $gen1 == "$gen2" && $(flux_secrets) == "$before" && $code3 == 200 ]]; then
    pass "flux: a reconcile with nothing changed (handled in ${noop_s}s): no new revision, $(grep -c . <<<"$pods2") pods the same (UIDs, restarts), workloads' generations as before, token and password unchanged, a create 200"
  else
    fail "flux: the reconcile with nothing changed: revision $(flux_hr '{.status.history[0].version}'), pods replaced or restarted: $restarted [$(comm -13 <(echo "$pods1") <(echo "$pods2") | tr '\n' ' ')], generations [$gen1] -> [$gen2], secrets [$(flux_secrets)], create $code3"
  fi

  stage "Flux: deleting the HelmRelease uninstalls the release"
  local had
  had=$(kubectl get deployment,statefulset,service -n "$FLUX_NS" -l app.kubernetes.io/instance="$REL" -o name | grep -c . || true)
  t=$SECONDS
  kubectl delete helmrelease -n "$FLUX_NS" "$REL" --timeout=180s >/dev/null || true
  local uninstall_s=$((SECONDS - t)) objects left kept releases
  # What the chart marks helm.sh/resource-policy: keep (the standalone Redis's ClusterIP Service) stays.
  objects=$(kubectl get deployment,statefulset,service,job -n "$FLUX_NS" -l app.kubernetes.io/instance="$REL" \
    -o jsonpath='{range .items[*]}{.kind}/{.metadata.name} {.metadata.annotations.helm\.sh/resource-policy}{"\n"}{end}')
  left=$(grep -v ' keep$' <<<"$objects" | grep -c . || true)
  kept=$(grep ' keep$' <<<"$objects" | cut -d' ' -f1 | tr '\n' ' ')
  releases=$(kubectl get secrets -n "$FLUX_NS" -l owner=helm,name="$REL" -o name | grep -c . || true)
  if ((had > 0 && left == 0 && releases == 0)) && [[ $kept == "Service/$REL-redis-master " ]] && ! kubectl get helmrelease -n "$FLUX_NS" "$REL" >/dev/null 2>&1; then
    pass "flux: the HelmRelease deleted in ${uninstall_s}s and the release uninstalled (its $had Deployment, StatefulSet and Service objects gone but the kept ${kept% }, no Job of it left, no Helm release record)"
  else
    fail "flux: after deleting the HelmRelease: $left workloads/Services/Jobs, kept [${kept% }] and $releases Helm release records left"
  fi
  figures "flux source-controller=$sc_version helm-controller=$hc_version controllers_ready_s=$controllers_s oci_ready_s=$oci_s release_ready_s=$ready_s tests=$tests create=$code1 upgrade_s=$upgrade_s create_after_upgrade=$code2 secrets_kept=$([[ $after == "$before" ]] && echo yes || echo no) noop_reconcile_s=$noop_s pods_restarted_by_noop=$restarted create_after_noop=$code3 uninstall_s=$uninstall_s scenario_s=$((SECONDS - FLUX_T0))"
}

flux_run
# Flux's objects go while their controllers still run to remove their
# finalizers; a namespace holding one would never finish terminating.
kubectl delete helmrelease,ocirepository -n "$FLUX_NS" --all --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
flux_stop
kubectl delete namespace "$FLUX_NS" source-system helm-system --ignore-not-found --wait=false >/dev/null
