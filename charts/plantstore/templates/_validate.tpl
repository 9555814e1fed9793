{{/*
Checks the schema cannot express. Included by every template that depends on them, so any render
fails with the same clear message.
*/}}
{{- define "plantstore.validate" -}}
{{- if not (hasKey . "plantstoreValidated") }}
{{- $_ := set . "plantstoreValidated" true }}
{{- /*
`helm upgrade --reuse-values` renders this chart with the values of the release's older chart: its
defaults and the user's, none of this chart's. Every template includes this check first, so such values
fail here with what to do, not with a nil pointer wherever a section this chart added is read. httpRoute
 is the newest section; a chart that adds sections names its own here (the render tests upgrade from
every released chart's values with --reuse-values).
*/}}
{{- if not (hasKey .Values "httpRoute") }}
{{- include "plantstore.fail" (printf "these values are an older chart's, not chart %s's: `helm upgrade --reuse-values` renders a new chart with the defaults of the chart the release was installed with, which lack the settings this chart added. Upgrade with --reset-then-reuse-values instead (Helm 3.14 or later: this chart's defaults, then the values you set before, then those you give now), or give all your values again with -f and --set, without --reuse-values" .Chart.Version) }}
{{- end }}
{{- $v := .Values }}
{{- $ext := $v.externalRedis }}
{{- /* labels: the chart's own are what its selectors match on */}}
{{- range $key, $_ := $v.commonLabels }}
{{- if has $key (list "helm.sh/chart" "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/version" "app.kubernetes.io/managed-by" "app.kubernetes.io/part-of" "app.kubernetes.io/component") }}
{{- include "plantstore.fail" (printf "commonLabels.%s: the chart sets this label itself on every object, and its selectors match on the app.kubernetes.io labels (a pod labelled otherwise falls out of its Deployment, Service and NetworkPolicy), so commonLabels cannot replace it. Remove %s from commonLabels: app.kubernetes.io/name follows nameOverride, app.kubernetes.io/instance the release name; for a label of your own use a key of your own, e.g. example.com/part-of" $key $key) }}
{{- end }}
{{- end }}
{{- /*
security contexts: rendered as given. Bitnami's charts take an `enabled` switch inside theirs
(podSecurityContext.enabled, containerSecurityContext.enabled); here it would reach the API server, which
refuses it, so it is refused now with what to write instead.
*/}}
{{- $contexts := dict "podSecurityContext" $v.podSecurityContext "securityContext" $v.securityContext "redis.podSecurityContext" $v.redis.podSecurityContext "redis.securityContext" $v.redis.securityContext "redis.metrics.containerSecurityContext" (dig "metrics" "containerSecurityContext" dict $v.redis) }}
{{- range $path, $sc := $contexts }}
{{- if and (kindIs "map" $sc) (hasKey $sc "enabled") }}
{{- include "plantstore.fail" (printf "%s.enabled (%v): this chart takes %s as given, as the Kubernetes securityContext it renders, and `enabled` is no field of one: it is another chart's switch (Bitnami's), which the API server would refuse. Remove %s.enabled. To keep the chart's restricted settings set nothing more; to change one set its field (%s.runAsUser: 1001); to leave one to the platform, as OpenShift assigns the user and group, set it to null (%s.runAsUser: null)" $path (get $sc "enabled") $path $path $path $path) }}
{{- end }}
{{- end }}
{{- /* the Gateway route */}}
{{- with $v.httpRoute }}
{{- if and .enabled (not .parentRefs) }}
{{- include "plantstore.fail" "httpRoute.enabled needs httpRoute.parentRefs: the Gateway, or one of its listeners, that the route attaches to, e.g. [{name: shared, namespace: gateway, sectionName: https}]; without one no Gateway serves it. Add one, or set httpRoute.enabled=false" }}
{{- end }}
{{- if and .enabled .timeouts.request .timeouts.backendRequest }}
{{- $attempts := add 1 (int .retry.attempts) }}
{{- $request := include "plantstore.durationMs" .timeouts.request | float64 }}
{{- $backend := include "plantstore.durationMs" .timeouts.backendRequest | float64 }}
{{- if lt $request (mulf $backend $attempts) }}
{{- include "plantstore.fail" (printf "httpRoute.timeouts.request (%s) must be at least httpRoute.timeouts.backendRequest (%s) times the attempts (%d: 1 + httpRoute.retry.attempts), or the Gateway gives up before the last attempt has had its time" .timeouts.request .timeouts.backendRequest $attempts) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* the store */}}
{{- if and $v.redis.enabled $ext.addresses }}
{{- include "plantstore.fail" "redis.enabled and externalRedis.addresses exclude each other: set redis.enabled=false to use an external Redis, or clear externalRedis.addresses to deploy the chart's Redis" }}
{{- end }}
{{- if and $v.redis.enabled (or $ext.masterName $ext.cluster $ext.existingSecret $ext.username $ext.tls.enabled $ext.sentinel.existingSecret) }}
{{- include "plantstore.fail" "externalRedis.* is set but redis.enabled is true: set redis.enabled=false and externalRedis.addresses to use an external Redis" }}
{{- end }}
{{- if and (not $v.redis.enabled) (not $ext.addresses) }}
{{- if not $v.allowEmbeddedStore }}
{{- include "plantstore.fail" "no store: redis.enabled is false and externalRedis.addresses is empty. Set redis.enabled=true (the chart's Redis), externalRedis.addresses, or allowEmbeddedStore=true to keep plants in memory only (lost on restart, per pod)" }}
{{- end }}
{{- if or $v.autoscaling.enabled (gt (int $v.replicaCount) 1) }}
{{- include "plantstore.fail" "allowEmbeddedStore: the embedded store lives in each pod's memory, so replicaCount must be 1 and autoscaling.enabled false (replicas would disagree about which plants exist)" }}
{{- end }}
{{- end }}
{{- if and $ext.masterName $ext.cluster }}
{{- include "plantstore.fail" "externalRedis.masterName (Sentinel) and externalRedis.cluster exclude each other" }}
{{- end }}
{{- if and (or $ext.masterName $ext.cluster) (not $ext.addresses) }}
{{- include "plantstore.fail" "externalRedis.masterName and externalRedis.cluster need externalRedis.addresses" }}
{{- end }}
{{- if and (include "plantstore.externalRedis.isCluster" .) (ne (int $v.config.redis.db) 0) }}
{{- include "plantstore.fail" "config.redis.db must be 0 with a Redis Cluster (externalRedis.cluster, or several addresses without masterName)" }}
{{- end }}
{{- if and (gt (include "plantstore.redis.minReplicaAcks" . | int) 0) (not $ext.addresses) (not (include "plantstore.redis.sentinel" .)) }}
{{- include "plantstore.fail" "config.redis.minReplicaAcks needs a Redis with replicas (redis.architecture sentinel, or externalRedis.addresses with Sentinel or Cluster): the chart's standalone Redis has none, so every create would answer 503" }}
{{- end }}
{{- if include "plantstore.redis.sentinel" . }}
{{- $s := $v.redis.sentinel }}
{{- if ge (include "plantstore.redis.minReplicaAcks" . | int) (int $s.replicas) }}
{{- include "plantstore.fail" (printf "config.redis.minReplicaAcks %d needs more than that many Redis servers (redis.sentinel.replicas is %d): one is the master" (include "plantstore.redis.minReplicaAcks" . | int) (int $s.replicas)) }}
{{- end }}
{{- if gt (int $s.quorum) (int $s.replicas) }}
{{- include "plantstore.fail" (printf "redis.sentinel.quorum %d is more than the %d Sentinels (redis.sentinel.replicas)" (int $s.quorum) (int $s.replicas)) }}
{{- end }}
{{- if eq (mod (int $s.replicas) 2) 0 }}
{{- include "plantstore.fail" (printf "redis.sentinel.replicas %d is even: Sentinels elect a leader by majority, so an odd count (3, 5) survives as many failures as the even count above it" (int $s.replicas)) }}
{{- end }}
{{- if ge (int $s.minReplicasToWrite) (int $s.replicas) }}
{{- include "plantstore.fail" (printf "redis.sentinel.minReplicasToWrite %d needs more than that many Redis servers (redis.sentinel.replicas is %d): one is the master" (int $s.minReplicasToWrite) (int $s.replicas)) }}
{{- end }}
{{- if and (gt (int $s.minReplicasToWrite) 0) (ge (mul (int $s.minReplicasMaxLag) 1000) (int $s.downAfterMilliseconds)) }}
{{- include "plantstore.fail" (printf "redis.sentinel.minReplicasMaxLag %ds must be below downAfterMilliseconds (%dms): a master cut off from its replicas must refuse writes before the Sentinels beyond the cut promote a replica" (int $s.minReplicasMaxLag) (int $s.downAfterMilliseconds)) }}
{{- end }}
{{- end }}
{{- if and $ext.existingSecret (not $ext.existingSecretKey) }}
{{- include "plantstore.fail" "externalRedis.existingSecretKey is required with externalRedis.existingSecret: the key of the Redis password in that Secret" }}
{{- end }}
{{- if and $ext.existingSecretKey (not $ext.existingSecret) }}
{{- include "plantstore.fail" "externalRedis.existingSecretKey is set but externalRedis.existingSecret is empty" }}
{{- end }}
{{- if and $ext.sentinel.existingSecret (not $ext.sentinel.existingSecretKey) }}
{{- include "plantstore.fail" "externalRedis.sentinel.existingSecretKey is required with externalRedis.sentinel.existingSecret: the key of the Sentinel password in that Secret" }}
{{- end }}
{{- if and (or $ext.sentinel.existingSecret $ext.sentinel.username) (not $ext.masterName) }}
{{- include "plantstore.fail" "externalRedis.sentinel.* needs externalRedis.masterName (Sentinel mode)" }}
{{- end }}
{{- if and (or $ext.tls.caSecret $ext.tls.serverName) (not $ext.tls.enabled) }}
{{- include "plantstore.fail" "externalRedis.tls.caSecret and externalRedis.tls.serverName need externalRedis.tls.enabled=true" }}
{{- end }}
{{- /* tokens */}}
{{- if and $v.auth.existingSecret $v.auth.tokens }}
{{- include "plantstore.fail" "auth.tokens and auth.existingSecret exclude each other: the tokens file comes from one of them" }}
{{- end }}
{{- if and $v.auth.existingSecret (not $v.auth.existingSecretKey) }}
{{- include "plantstore.fail" "auth.existingSecretKey is required with auth.existingSecret: the key of the tokens file in that Secret" }}
{{- end }}
{{- /* JWT: what the service would refuse at start, or in the tokens file, said here */}}
{{- $jwt := $v.auth.jwt }}
{{- $issuers := list }}
{{- if $jwt.kubernetes.enabled }}{{ $issuers = append $issuers $jwt.kubernetes.issuer }}{{ end }}
{{- range $i, $iss := $jwt.issuers }}
{{- if has $iss.url $issuers }}
{{- include "plantstore.fail" (printf "auth.jwt.issuers[%d]: the issuer %s is configured twice (auth.jwt.kubernetes.issuer or an earlier item): one line an issuer" $i $iss.url) }}
{{- end }}
{{- $issuers = append $issuers $iss.url }}
{{- end }}
{{- if include "plantstore.jwt.enabled" . }}
{{- if gt (include "plantstore.durationMs" $jwt.refreshMinInterval | float64) (include "plantstore.durationMs" $jwt.refreshInterval | float64) }}
{{- include "plantstore.fail" (printf "auth.jwt.refreshMinInterval (%s) must not exceed auth.jwt.refreshInterval (%s): the service refuses to start otherwise" $jwt.refreshMinInterval $jwt.refreshInterval) }}
{{- end }}
{{- if gt (include "plantstore.durationMs" $jwt.leeway | float64) 300000.0 }}
{{- include "plantstore.fail" (printf "auth.jwt.leeway (%s) must be at most 5m: the service refuses to start otherwise" $jwt.leeway) }}
{{- end }}
{{- range list "refreshInterval" "refreshMinInterval" "timeout" }}
{{- if eq (include "plantstore.durationMs" (get $jwt .) | float64) 0.0 }}
{{- include "plantstore.fail" (printf "auth.jwt.%s must be positive: the service refuses to start otherwise" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $v.auth.existingSecret $v.auth.identities }}
{{- include "plantstore.fail" "auth.identities needs a tokens Secret the chart manages, but auth.existingSecret is set: write the identity lines into that Secret's tokens file yourself (issuer=<URL> subject=<sub> name=<client> ..., docs/operations.md \"JWT callers\") and leave auth.identities empty" }}
{{- end }}
{{- range $i, $id := $v.auth.identities }}
{{- $at := printf "auth.identities[%d]" $i }}
{{- if not $id.name }}
{{- include "plantstore.fail" (printf "%s: name is required: the client the identity is mapped to (logs, metrics, rate limits, scopes)" $at) }}
{{- end }}
{{- $at = printf "%s (name %s)" $at $id.name }}
{{- if and $id.serviceAccount $id.subject }}
{{- include "plantstore.fail" (printf "%s: serviceAccount and subject exclude each other: serviceAccount <namespace>/<name> is the subject system:serviceaccount:<namespace>:<name>" $at) }}
{{- end }}
{{- if not (or $id.serviceAccount $id.subject $id.claim) }}
{{- include "plantstore.fail" (printf "%s: needs serviceAccount (<namespace>/<name>) or subject, or a claim: it would otherwise name no one" $at) }}
{{- end }}
{{- if and $id.serviceAccount (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$" $id.serviceAccount)) }}
{{- include "plantstore.fail" (printf "%s: serviceAccount %q must be <namespace>/<name>" $at $id.serviceAccount) }}
{{- end }}
{{- if and $id.burst (not $id.rate) }}
{{- include "plantstore.fail" (printf "%s: burst needs rate: the service would refuse the whole tokens file" $at) }}
{{- end }}
{{- $issuer := $id.issuer | default $jwt.kubernetes.issuer }}
{{- if not (has $issuer $issuers) }}
{{- include "plantstore.fail" (printf "%s: its issuer %s is not configured, so it would match no token: set auth.jwt.kubernetes.enabled=true for the cluster's issuer, or add it to auth.jwt.issuers" $at $issuer) }}
{{- end }}
{{- end }}
{{- /* shutdown: the grace period must cover the delay and the drain */}}
{{- $delay := include "plantstore.durationMs" $v.config.shutdownDelay | float64 }}
{{- $timeout := include "plantstore.durationMs" $v.config.shutdownTimeout | float64 }}
{{- $grace := mulf (int $v.terminationGracePeriodSeconds) 1000.0 }}
{{- if le $grace (addf $delay $timeout) }}
{{- include "plantstore.fail" (printf "terminationGracePeriodSeconds (%ds) must be greater than config.shutdownDelay (%s) + config.shutdownTimeout (%s): otherwise Kubernetes kills the pod before in-flight requests finish" (int $v.terminationGracePeriodSeconds) $v.config.shutdownDelay $v.config.shutdownTimeout) }}
{{- end }}
{{- /* the migration Job: its settle time must fit in its deadline */}}
{{- if include "plantstore.migration.enabled" . }}
{{- $settle := include "plantstore.migration.settle" . }}
{{- if lt (include "plantstore.durationMs" $settle | float64) (include "plantstore.durationMs" (include "plantstore.migration.settleFound" .) | float64) }}
{{- $settle = include "plantstore.migration.settleFound" . }}
{{- end }}
{{- if ge (include "plantstore.durationMs" $settle | float64) (mulf (int $v.migration.activeDeadlineSeconds) 1000.0) }}
{{- include "plantstore.fail" (printf "migration.activeDeadlineSeconds (%ds) must exceed the migration's settle time (%s, migration.settle or terminationGracePeriodSeconds + 5s): otherwise the Job is killed before it can succeed" (int $v.migration.activeDeadlineSeconds) $settle) }}
{{- end }}
{{- end }}
{{- /* the Redis PVCs: their claim template cannot change */}}
{{- if $v.redis.enabled }}
{{- include "plantstore.redis.checkClaimTemplate" . }}
{{- end }}
{{- /* scaling */}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) }}
{{- include "plantstore.fail" "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A Go duration ("5s", "1m30s", "500ms", "0"), Gateway API durations included, in milliseconds, as a
decimal string. Call with the duration string. The schema has already checked the syntax.
*/}}
{{- define "plantstore.durationMs" -}}
{{- $units := dict "ns" 0.000001 "us" 0.001 "µs" 0.001 "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" (toString .) -1 }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" . | float64 }}
{{- $unit := regexReplaceAll "^[0-9]+(\\.[0-9]+)?" . "" }}
{{- $total = addf $total (mulf $num (get $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}
