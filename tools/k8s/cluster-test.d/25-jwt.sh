# shellcheck shell=bash
# Callers identified by the cluster (contract section 12): a release that
# trusts the cluster's own service-account issuer (auth.jwt.kubernetes) and
# maps one service account to a client (auth.identities), and a caller pod
# of that service account with a projected token for audience plantstore,
# which it reads again before every create. Shown now: its creates are 200
# and counted under its client; a token of the same account for another
# audience is refused 401 invalid_token, one of an unmapped account 403
# 40302. Shown after the last scenario (the kubelet rotates a 10-minute
# token after 8, the API server issues none shorter): every create of the
# caller 200 across the rotation, with neither side restarted, and a token
# of its account minted at the start of the run (03-jwt-token.sh; the
# caller's first when that did not run), presented past its expiry,
# refused 401. After the Sentinel scenario: the pods must live to the end
# of the run, and the scenarios before drain and kill nodes.

JWT_NS=jwt
# The shortest token the API server issues; the kubelet replaces it once 80 %
# of it has passed.
JWT_TOKEN_SECONDS=600

stage "JWT callers: the cluster's service-account issuer trusted, a caller pod's projected token for audience plantstore"
# 03-jwt-token.sh made the namespace and the account, unless the run
# skipped it.
if ! kubectl get namespace "$JWT_NS" >/dev/null 2>&1; then
  restricted_ns "$JWT_NS"
  kubectl create serviceaccount -n "$JWT_NS" orders >/dev/null
fi
kubectl create serviceaccount -n "$JWT_NS" stranger >/dev/null
cat >"$CLUSTER_DIR/jwt-values.yaml" <<EOF
auth:
  jwt:
    kubernetes: {enabled: true}
  identities:
    - {serviceAccount: $JWT_NS/orders, name: orders, scopes: [plants:read, plants:write]}
EOF
t=$SECONDS
if logged install-jwt "helm install with auth.jwt.kubernetes.enabled" helm install "$REL" "$CHART" -n "$JWT_NS" \
  -f "$CLUSTER_DIR/jwt-values.yaml" "${APP_IMAGE[@]}" "${APISERVER_METRICS[@]}" --wait --timeout 180s; then
  pass "helm install with auth.jwt.kubernetes.enabled and an identity for $JWT_NS/orders: Ready in $((SECONDS - t))s"
fi

# The caller: a create every 2 s with the token as the kubelet keeps it,
# each logged as "<unix time> <token's digest> <status>"; its first token
# kept (when the rotation began, and for the expiry check of a run that
# minted no token first).
jwt_base=$(($(date +%s) % 100000 * 1000 + 700000000))
kubectl apply -n "$JWT_NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: jwt-caller, labels: {app.kubernetes.io/name: scenario-client}}
spec:
  serviceAccountName: orders
  automountServiceAccountToken: false
  containers:
    - name: caller
      image: plantstore.test/client:1
      imagePullPolicy: Never
      command:
        - sh
        - -c
        - |
          cp /var/run/secrets/plantstore/token /tmp/first
          i=0
          while :; do
            t=\$(cat /var/run/secrets/plantstore/token)
            id=\$(($jwt_base + i))
            code=\$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST http://$REL:8080/plants \
              -H "Authorization: Bearer \$t" -H 'Content-Type: application/json' -d "{\"id\": \$id, \"name\": \"jwt-\$id\"}")
            echo "\$(date +%s) \$(printf %s "\$t" | sha256sum | cut -c1-12) \$code"
            i=\$((i + 1))
            sleep 2
          done
      $SECURE
      volumeMounts:
        - {name: token, mountPath: /var/run/secrets/plantstore, readOnly: true}
        - {name: tmp, mountPath: /tmp}
  volumes:
    - name: token
      projected:
        sources:
          - serviceAccountToken: {audience: plantstore, expirationSeconds: $JWT_TOKEN_SECONDS, path: token}
    - {name: tmp, emptyDir: {sizeLimit: 1Mi}}
EOF
kubectl wait -n "$JWT_NS" --for=condition=Ready pod/jwt-caller --timeout=60s >/dev/null || true
for _ in $(seq 30); do
  [[ $(kubectl logs -n "$JWT_NS" jwt-caller 2>/dev/null | wc -l) -ge 3 ]] && break
  sleep 1
done
first=$(kubectl logs -n "$JWT_NS" jwt-caller 2>/dev/null | head -n 3 | awk '{print $3}' | sort -u | tr '\n' ' ')

# jwt_refusal TOKEN: a create with TOKEN through the Service: the status,
# the challenge and the Error body.
jwt_ip=$(kubectl get svc -n "$JWT_NS" "$REL" -o jsonpath='{.spec.clusterIP}')
jwt_refusal() {
  node_curl -X POST "http://$jwt_ip:8080/plants" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -d "{\"id\": $jwt_base, \"name\": \"refused\"}" -D - | tr -d '\r' | grep -i -e '^HTTP/' -e '^www-authenticate:' -e '^{' | tr '\n' ' '
}
other=$(jwt_refusal "$(kubectl create token -n "$JWT_NS" orders --audience other --duration 10m)")
stranger=$(jwt_refusal "$(kubectl create token -n "$JWT_NS" stranger --audience plantstore --duration 10m)")
# What must still run unchanged when the rotation is checked.
jwt_pods() { kubectl get pods -n "$JWT_NS" -o jsonpath='{range .items[*]}{.metadata.name}/{.metadata.uid}/{.status.containerStatuses[*].restartCount} {end}'; }
JWT_PODS=$(jwt_pods)
# Every API pod's count: the Service spreads the caller's creates.
counted=$(for p in $(kubectl get pods -n "$JWT_NS" -l app.kubernetes.io/component=api -o name); do
  kubectl get --raw "/api/v1/namespaces/$JWT_NS/pods/${p#pod/}:9090/proxy/metrics"
done | awk '/^plantstore_http_requests_total\{/ && /client="orders"/ && /code="200"/ && /route="\/plants"/ {n += $NF} END {print n + 0}')
figures "jwt-serviceaccount first_creates=[${first% }] counted_under_orders=$counted other_audience=[$other] unmapped=[$stranger]"
if [[ $first == "200 " ]] && ((counted > 0)); then
  pass "a pod of service account $JWT_NS/orders, its projected token for audience plantstore: creates 200, counted under client \"orders\" ($counted, every API pod's)"
else
  fail "the caller pod's creates: [$first], $counted counted under \"orders\""
  kubectl logs -n "$JWT_NS" deployment/"$REL" --tail=20 || true
fi
if [[ $other == *' 401 '*'error="invalid_token"'*'"error":40102'*audience* ]]; then
  pass "the same account's token for audience \"other\": 401 40102 invalid_token, the message naming the audience"
else
  fail "a token for another audience: $other"
fi
if [[ $stranger == *' 403 '*'error="insufficient_scope"'*'"error":40302'* ]]; then
  pass "a valid token of the unmapped account $JWT_NS/stranger: 403 40302 insufficient_scope"
else
  fail "a token of an unmapped account: $stranger"
fi

# jwt_rotation: after the last scenario. Waits (bounded by the tokens'
# lives) until the kubelet has replaced the caller's token and the token to
# present is past its expiry and the service's leeway; then reads the
# caller's log and presents that token.
jwt_rotation() {
  stage "JWT callers: the caller's token rotated by the kubelet, a token of its account past expiry"
  local first token exp leeway=30 calls failed tokens expired pods deadline
  if ! first=$(kubectl exec -n "$JWT_NS" jwt-caller -- cat /tmp/first); then
    fail "the caller pod is gone: its token's rotation was not seen"
    kubectl get events -n "$JWT_NS" --field-selector involvedObject.name=jwt-caller | tail -n 5
    return 0
  fi
  # The token minted first (03-jwt-token.sh), else the caller's first.
  token=$(cat "$CLUSTER_DIR/jwt-early-token" 2>/dev/null || echo "$first")
  exp=$(jwt_claim "$token" exp)
  # The kubelet replaces the caller's token once 80 % of it has passed and
  # writes it at its next sync of the pod: wait for that, within the token's
  # life, and for the other token to be past its expiry and the leeway.
  deadline=$(($(jwt_claim "$first" iat) + JWT_TOKEN_SECONDS))
  while (($(date +%s) < deadline)) &&
    (($(kubectl logs -n "$JWT_NS" jwt-caller | awk '{print $2}' | sort -u | wc -l) < 2)); do
    sleep 5
  done
  if ((exp + leeway + 2 > $(date +%s))); then
    echo "waiting $((exp + leeway + 2 - $(date +%s)))s for the token to expire"
    sleep $((exp + leeway + 2 - $(date +%s)))
  fi
  kubectl logs -n "$JWT_NS" jwt-caller >"$CLUSTER_DIR/logs/jwt-caller.log"
  calls=$(wc -l <"$CLUSTER_DIR/logs/jwt-caller.log")
  failed=$(awk '$3 != 200' "$CLUSTER_DIR/logs/jwt-caller.log" | wc -l)
  tokens=$(awk '{print $2}' "$CLUSTER_DIR/logs/jwt-caller.log" | sort -u | wc -l)
  expired=$(jwt_refusal "$token")
  pods=$(jwt_pods)
  figures "jwt-rotation calls=$calls failed=$failed tokens_seen=$tokens pods_unchanged=$([[ $pods == "$JWT_PODS" ]] && echo true || echo false) expired_token=[$expired]"
  if ((calls > 0 && failed == 0 && tokens >= 2)) && [[ $pods == "$JWT_PODS" ]]; then
    pass "the caller's $calls creates over $tokens tokens (the kubelet rotated its ${JWT_TOKEN_SECONDS}s token): every one 200, neither side restarted nor replaced"
  else
    fail "across the token's rotation: $calls creates, $failed not 200, $tokens tokens seen; pods then [$JWT_PODS], now [$pods]"
    awk '$3 != 200' "$CLUSTER_DIR/logs/jwt-caller.log" | head -n 5
  fi
  if [[ $expired == *' 401 '*'error="invalid_token"'*'"error":40102'*expired* ]]; then
    pass "a token of $JWT_NS/orders for audience plantstore, presented past its expiry: 401 40102 invalid_token, \"expired\""
  else
    fail "a token past its expiry: $expired"
  fi
  kubectl delete namespace "$JWT_NS" --wait=false >/dev/null
}
# jwt_claim TOKEN NAME: a numeric claim of a JWT's payload (not verified).
jwt_claim() { cut -d. -f2 <<<"$1" | tr '_-' '/+' | awk '{while (length($0) % 4) $0 = $0 "="; print}' | base64 -d 2>/dev/null | jq -r ".$2"; }
later jwt_rotation
