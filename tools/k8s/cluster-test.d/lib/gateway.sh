# shellcheck shell=bash
# A Gateway API implementation as a user runs one in front of the chart:
# Traefik v3.6 (tools/k8s/client-go-0.34) as the GatewayClass "traefik"'s
# controller, one replica a zone behind the Service gateway/traefik (and
# gateway/traefik-local, each node's own), with the plugin that retries a
# 503 by its Retry-After (tools/k8s/client-go-0.34/retry503), and a Gateway
# "shared" in the namespace gateway with one HTTPS listener (https, port
# 8443: Traefik's listeners are its entry points) whose certificate, for
# GW_HOST, comes from a CA the suite makes. Routes from every namespace may
# attach to it. The CRDs: Gateway API v1.6.3's Standard channel, and
# Traefik's own (its Middleware carries the retry policies an HTTPRoute
# attaches with ExtensionRef filters), both from their modules.
#
#   gw_up              install all of it (once: the Gateway stays up for
#                      the scenarios after the first that needs it); sets
#                      GW_IP (the Service's ClusterIP), GW_LOCAL_IP
#                      (traefik-local's) and GW_CA (the CA's certificate, a
#                      file)
#   gw_attach NS VALUES  what a release in NS needs to be served by the
#                      Gateway: the retry Middlewares and the CA's Secret
#                      gateway-ca (for the load, LOAD_GATEWAY) in NS, and
#                      the chart's httpRoute values written to VALUES
#   gw_curl ARGS...    curl from the control plane's namespace to
#                      https://$GW_HOST (port 443 of the Service), trusting GW_CA
#   gw_route_ok NS NAME  the HTTPRoute's conditions for its parent: Accepted
#                      and ResolvedRefs True (prints them)
# Sourced by a scenario of tools/k8s/cluster-test.sh, whose helpers it uses.

GW_NS=gateway GW_HOST=plantstore.test
# The 503 retry plugin's module (its directory under the plugins' GOPATH).
GW_RETRY503=github.com/plantstore/plantstore/tools/k8s/client-go-0.34/retry503
# The Gateway API whose CRDs validate.sh installs (tools/k8s/crds.sh).
GATEWAY_API_VERSION=$(sed -n 's/^GATEWAY_API=.*@//p' "$TOOLS_MOD/crds.sh")

GW_UP=${GW_UP:-0}
gw_up() {
  ((GW_UP)) && return 0
  local gwapi traefik
  "$CLUSTER" images gateway || return 1
  gwapi=$(mod_dir "$TOOLS_MOD/client-go-0.34" "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION") || return 1
  traefik=$(mod_dir "$TOOLS_MOD/client-go-0.34" "github.com/traefik/traefik/v3@$(mod_version "$TOOLS_MOD/client-go-0.34" github.com/traefik/traefik/v3)") || return 1
  # The CRDs are too big for client-side apply's annotation.
  kubectl apply --server-side -f "$gwapi/config/crd/standard/" >/dev/null || return 1
  kubectl apply --server-side -f "$traefik/docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml" >/dev/null || return 1
  kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null || return 1

  kubectl create namespace "$GW_NS" >/dev/null
  local d
  d=$(mktemp -d)
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=plantstore test CA" \
    -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null || return 1
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$GW_HOST" -keyout "$d/tls.key" -out "$d/tls.csr" 2>/dev/null || return 1
  openssl x509 -req -in "$d/tls.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
    -extfile <(printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$GW_HOST") -out "$d/tls.crt" 2>/dev/null || return 1
  kubectl create secret tls -n "$GW_NS" gateway-tls --cert "$d/tls.crt" --key "$d/tls.key" >/dev/null || return 1
  GW_CA=$CLUSTER_DIR/gateway-ca.crt
  cp "$d/ca.crt" "$GW_CA"
  rm -rf "$d"

  # The retry of a 503 by its Retry-After (tools/k8s/client-go-0.34/retry503), a
  # local plugin: its source where Traefik's interpreter looks for it.
  kubectl create configmap -n "$GW_NS" traefik-retry503 --from-file="$TOOLS_MOD/client-go-0.34/retry503/retry503.go" \
    --from-file="$TOOLS_MOD/client-go-0.34/retry503/.traefik.yml" >/dev/null || return 1
  kubectl apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: ServiceAccount
metadata: {name: traefik, namespace: $GW_NS}
---
# What Traefik's Gateway API and CRD providers read, as its documentation's
# RBAC grants it (the Ingress rules left out: that provider is off).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: plantstore-test-traefik}
rules:
  - apiGroups: [""]
    resources: [namespaces, services, secrets, configmaps, nodes]
    verbs: [get, list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
  - apiGroups: [gateway.networking.k8s.io]
    resources: [gatewayclasses, gateways, httproutes, grpcroutes, tcproutes, tlsroutes, referencegrants, backendtlspolicies]
    verbs: [get, list, watch]
  - apiGroups: [gateway.networking.k8s.io]
    resources: [gatewayclasses/status, gateways/status, httproutes/status, grpcroutes/status, tcproutes/status, tlsroutes/status, referencegrants/status, backendtlspolicies/status]
    verbs: [update]
  - apiGroups: [traefik.io]
    resources: [middlewares, middlewaretcps, ingressroutes, traefikservices, ingressroutetcps, ingressrouteudps, tlsoptions, tlsstores, serverstransports, serverstransporttcps]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: plantstore-test-traefik}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: plantstore-test-traefik}
subjects: [{kind: ServiceAccount, name: traefik, namespace: $GW_NS}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: traefik, namespace: $GW_NS}
spec:
  # One a zone: every node has a Gateway pod to enter by (traefik-local).
  replicas: 3
  selector: {matchLabels: {app.kubernetes.io/name: traefik}}
  template:
    metadata: {labels: {app.kubernetes.io/name: traefik}}
    spec:
      serviceAccountName: traefik
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app.kubernetes.io/name: traefik}}}
      # Traefik's own drain, as its chart sets it: keep serving while the
      # Service's endpoints drop this pod.
      terminationGracePeriodSeconds: 30
      containers:
        - name: traefik
          image: plantstore.test/traefik:1
          imagePullPolicy: Never
          workingDir: /plugins
          args:
            - --experimental.localPlugins.retry503.moduleName=$GW_RETRY503
            - --entryPoints.web.address=:8000
            - --entryPoints.websecure.address=:8443
            - --entryPoints.traefik.address=:9000
            - --entryPoints.websecure.transport.lifeCycle.requestAcceptGraceTimeout=5s
            - --ping=true
            - --providers.kubernetesGateway=true
            - --providers.kubernetesCRD=true
            # Its spans to the OpenTelemetry Collector the chart's README
            # names (lib/observability.sh), every request (sampleRate's
            # default, 1.0), a caller's sampled traceparent followed.
            - --tracing.otlp.http.endpoint=http://otel-collector.observability:4318/v1/traces
            # A pod whose node is gone answers no SYN: give up on it soon
            # (Traefik's default waits 30 s; a connect here takes
            # milliseconds), so the route's retry reaches a live pod before
            # the caller's deadline. Until the dead pods leave the endpoints
            # Traefik's retry picks them as often as they are there (two of
            # three when a drain left two API pods on the node lost), each
            # pick costing this timeout.
            - --serversTransport.forwardingTimeouts.dialTimeout=250ms
            # Traefik ignores the route's timeouts: in backendRequest's place,
            # above the service's own deadlines (storeTimeout and
            # rateLimitTimeout, 1.1 s; no JWT callers here), an attempt sent to
            # a pod whose node died gets a 504 here, which the route's retry
            # sends again. Until the node is NotReady (about 20 s) an attempt
            # may land there more than once: 2 s each, not 5.
            - --serversTransport.forwardingTimeouts.responseHeaderTimeout=2s
            # Its access log, JSON on stdout, only of what a disruption's
            # verdict must explain: its own 5xx answers, the requests its
            # retry sent again, and those held 20 s or more (the retry
            # plugin's attempts are not counted in RetryAttempts, their time
            # is; gw_access_log reads it).
            - --accesslog=true
            - --accesslog.format=json
            - --accesslog.filters.statuscodes=500-599
            - --accesslog.filters.retryattempts=true
            - --accesslog.filters.minduration=20s
            - --log.level=INFO
          ports:
            - {name: web, containerPort: 8000}
            - {name: websecure, containerPort: 8443}
            - {name: traefik, containerPort: 9000}
          # While a failover's 503s are retried the machine's two cores are
          # busy and /ping may take longer than the default 1 s: a probe
          # that timed out took the load's node's pod out of traefik-local,
          # its only endpoint (every new connection: no route to host). A
          # draining pod answers 503 at once: still out within a period.
          readinessProbe: {httpGet: {path: /ping, port: 9000}, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 1}
          livenessProbe: {httpGet: {path: /ping, port: 9000}, periodSeconds: 10, timeoutSeconds: 5}
          # Room for the requests the route's retry holds across a failover:
          # at 250 creates/s some 2,000 at once.
          resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 1Gi}}
          volumeMounts: [{name: retry503, mountPath: /plugins/plugins-local/src/$GW_RETRY503, readOnly: true}]
          $SECURE
      volumes: [{name: retry503, configMap: {name: traefik-retry503}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: traefik, namespace: $GW_NS}
spec:
  minAvailable: 1
  selector: {matchLabels: {app.kubernetes.io/name: traefik}}
---
apiVersion: v1
kind: Service
metadata: {name: traefik, namespace: $GW_NS}
spec:
  selector: {app.kubernetes.io/name: traefik}
  ports:
    - {name: web, port: 80, targetPort: web}
    - {name: websecure, port: 443, targetPort: websecure}
---
# A caller in the cluster reaches the Gateway through its own node's Traefik
# pod here, as a cloud load balancer with health checks sends outside
# callers only to living nodes: the node-loss load enters here.
apiVersion: v1
kind: Service
metadata: {name: traefik-local, namespace: $GW_NS}
spec:
  selector: {app.kubernetes.io/name: traefik}
  internalTrafficPolicy: Local
  ports:
    - {name: websecure, port: 443, targetPort: websecure}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: traefik}
spec:
  controllerName: traefik.io/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: shared, namespace: $GW_NS}
spec:
  gatewayClassName: traefik
  listeners:
    - name: https
      protocol: HTTPS
      port: 8443
      hostname: $GW_HOST
      tls:
        mode: Terminate
        certificateRefs: [{kind: Secret, name: gateway-tls}]
      allowedRoutes: {namespaces: {from: All}}
EOF
  kubectl rollout status -n "$GW_NS" deployment/traefik --timeout=120s >/dev/null || return 1
  kubectl wait -n "$GW_NS" --for=condition=Programmed gateway/shared --timeout=60s >/dev/null || return 1
  GW_IP=$(kubectl get svc -n "$GW_NS" traefik -o jsonpath='{.spec.clusterIP}')
  # shellcheck disable=SC2034 # the node-loss scenario's load enters here
  GW_LOCAL_IP=$(kubectl get svc -n "$GW_NS" traefik-local -o jsonpath='{.spec.clusterIP}')
  GW_UP=1
  later gw_down
}

gw_down() { kubectl delete namespace "$GW_NS" --wait=false >/dev/null; }

gw_attach() {
  local ns=$1 values=$2
  # Traefik's retry: an attempt that could not reach a pod (a pod gone
  # away, a dead node's pod past the dial timeout) is sent again, to the pod
  # its load balancer picks next. Until the dead node's pods leave the
  # endpoints, each pick is theirs with a chance of one in three, or two in
  # three when the node held two of the three API pods: ten attempts all on
  # them are a chance in 59,000, or in 58.
  # Around it the plugin's: an attempt answered 503 with Retry-After (the
  # store away: a Redis failover takes up to about 8 s here) sent again after
  # that wait, and one Traefik answered 502 or 504 (ten dead picks, or sent to
  # a pod that never answered, 2 s each) after 100 ms, 11 attempts in all.
  kubectl apply -n "$ns" -f - >/dev/null <<EOF || return 1
apiVersion: traefik.io/v1alpha1
kind: Middleware
metadata: {name: plantstore-retry}
spec:
  retry: {attempts: 10, initialInterval: 100ms}
---
apiVersion: traefik.io/v1alpha1
kind: Middleware
metadata: {name: plantstore-retry-503}
spec:
  plugin:
    retry503: {attempts: 11, maxWait: 2s, retryOn: [502, 504], interval: 100ms, logHeldOver: 20s}
EOF
  kubectl create secret generic -n "$ns" gateway-ca --from-file=ca.crt="$GW_CA" >/dev/null || return 1
  cat >"$values" <<EOF
httpRoute:
  enabled: true
  parentRefs: [{name: shared, namespace: $GW_NS, sectionName: https}]
  hostnames: [$GW_HOST]
  filters:
    - type: ExtensionRef
      extensionRef: {group: traefik.io, kind: Middleware, name: plantstore-retry-503}
    - type: ExtensionRef
      extensionRef: {group: traefik.io, kind: Middleware, name: plantstore-retry}
EOF
}

# gw_access_log_start FILE: follow the Traefik pods' logs into FILE, so a
# pod drained meanwhile keeps its lines. gw_access_log FILE: stop following,
# add the lines of the pods started since, and print the access log's
# entries (one JSON object each): when, the pod they went to, the statuses,
# the retries and how long.
gw_access_log_start() {
  kubectl get pods -n "$GW_NS" -l app.kubernetes.io/name=traefik -o name >"$1.pods"
  kubectl logs -f -n "$GW_NS" -l app.kubernetes.io/name=traefik --max-log-requests=10 --since=1s >"$1" 2>/dev/null &
  echo $! >"$1.pid"
}
gw_access_log() {
  local p
  kill "$(cat "$1.pid")" 2>/dev/null || true
  for p in $(kubectl get pods -n "$GW_NS" -l app.kubernetes.io/name=traefik -o name); do
    grep -qx "$p" "$1.pods" || kubectl logs -n "$GW_NS" "$p" >>"$1" 2>/dev/null || true
  done
  grep '^{' "$1" | jq -c 'select(.DownstreamStatus != null) | {StartUTC, ServiceAddr, OriginStatus, DownstreamStatus, RetryAttempts, ms: ((.Duration // 0) / 1e6 | floor), origin_ms: ((.OriginDuration // 0) / 1e6 | floor)}' 2>/dev/null || true
}

gw_curl() { node_curl --cacert "$GW_CA" --resolve "$GW_HOST:443:$GW_IP" "$@"; }

gw_route_ok() {
  local c
  c=$(kubectl get httproute -n "$1" "$2" -o json |
    jq -r '[.status.parents[]? | select(.parentRef.name == "shared") | .conditions[] | select(.type == "Accepted" or .type == "ResolvedRefs") | "\(.type)=\(.status)"] | sort | join(" ")')
  echo "$c"
  [[ $c == "Accepted=True ResolvedRefs=True" ]]
}
