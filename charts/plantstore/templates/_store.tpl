{{/* How the service, in the API pods and the migration Job, reaches its store: its environment, CA bundle and egress. */}}

{{/* Which store the service uses: redis, external or embedded. */}}
{{- define "plantstore.store" -}}
{{- if .Values.redis.enabled }}redis{{ else if .Values.externalRedis.addresses }}external{{ else }}embedded{{ end }}
{{- end }}

{{/* Whether the external Redis runs in Cluster mode (what the service decides from the same values). */}}
{{- define "plantstore.externalRedis.isCluster" -}}
{{- if and (not .Values.externalRedis.masterName) (or .Values.externalRedis.cluster (gt (len .Values.externalRedis.addresses) 1)) }}true{{ end }}
{{- end }}

{{/*
The Redis environment of the service (PLANTSTORE_REDIS_*), the same for the API pods and the migration
Job: EnvVar items at column 0, for nindent. With the embedded store, only an empty PLANTSTORE_REDIS_ADDR.
*/}}
{{- define "plantstore.redisEnv" -}}
{{- $store := include "plantstore.store" . }}
{{- $ext := .Values.externalRedis }}
{{- if include "plantstore.redis.sentinel" . -}}
# The chart's Sentinels, one beside each Redis server: they name the master.
- name: PLANTSTORE_REDIS_ADDR
  value: {{ regexReplaceAll "( |$)" (include "plantstore.redis.hosts" .) ":26379$1" | replace " " "," | quote }}
- name: PLANTSTORE_REDIS_MASTER_NAME
  value: {{ .Values.redis.sentinel.masterName | quote }}
{{ include "plantstore.redis.passwordEnv" (list . "PLANTSTORE_REDIS_PASSWORD") }}
# The Sentinels ask for the same password.
{{ include "plantstore.redis.passwordEnv" (list . "PLANTSTORE_REDIS_SENTINEL_PASSWORD") }}
{{- else if eq $store "redis" -}}
# The chart's Redis, through its ClusterIP Service.
- name: PLANTSTORE_REDIS_ADDR
  value: {{ printf "%s:6379" (include "plantstore.redis.masterName" .) | quote }}
{{ include "plantstore.redis.passwordEnv" (list . "PLANTSTORE_REDIS_PASSWORD") }}
{{- else if eq $store "external" -}}
- name: PLANTSTORE_REDIS_ADDR
  value: {{ join "," $ext.addresses | quote }}
{{- with $ext.masterName }}
- name: PLANTSTORE_REDIS_MASTER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if $ext.cluster }}
- name: PLANTSTORE_REDIS_CLUSTER
  value: "true"
{{- end }}
{{- with $ext.username }}
- name: PLANTSTORE_REDIS_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- if $ext.existingSecret }}
- name: PLANTSTORE_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $ext.existingSecret }}
      key: {{ $ext.existingSecretKey }}
{{- end }}
{{- with $ext.sentinel.username }}
- name: PLANTSTORE_REDIS_SENTINEL_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- if $ext.sentinel.existingSecret }}
- name: PLANTSTORE_REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $ext.sentinel.existingSecret }}
      key: {{ $ext.sentinel.existingSecretKey }}
{{- end }}
{{- if $ext.tls.enabled }}
- name: PLANTSTORE_REDIS_TLS
  value: "true"
{{- with $ext.tls.serverName }}
- name: PLANTSTORE_REDIS_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if $ext.tls.caSecret }}
- name: PLANTSTORE_REDIS_TLS_CA_FILE
  value: /etc/plantstore/redis-ca/ca.crt
{{- end }}
{{- end }}
{{- else -}}
# allowEmbeddedStore: no Redis address selects the in-memory store (not durable).
- name: PLANTSTORE_REDIS_ADDR
  value: ""
{{- end }}
{{- if ne $store "embedded" }}
- name: PLANTSTORE_REDIS_KEY_PREFIX
  value: {{ .Values.config.redis.keyPrefix | quote }}
{{- if not (include "plantstore.externalRedis.isCluster" .) }}
- name: PLANTSTORE_REDIS_DB
  value: {{ .Values.config.redis.db | int | quote }}
{{- end }}
- name: PLANTSTORE_REDIS_POOL_SIZE
  value: {{ .Values.config.redis.poolSize | int | quote }}
- name: PLANTSTORE_REDIS_BATCH
  value: {{ .Values.config.redis.batch | quote }}
- name: PLANTSTORE_REDIS_MAX_RETRIES
  value: {{ .Values.config.redis.maxRetries | int | quote }}
- name: PLANTSTORE_REDIS_DIAL_TIMEOUT
  value: {{ .Values.config.redis.dialTimeout | quote }}
- name: PLANTSTORE_REDIS_READ_TIMEOUT
  value: {{ .Values.config.redis.readTimeout | quote }}
- name: PLANTSTORE_REDIS_WRITE_TIMEOUT
  value: {{ .Values.config.redis.writeTimeout | quote }}
- name: PLANTSTORE_REDIS_MIN_REPLICA_ACKS
  value: {{ include "plantstore.redis.minReplicaAcks" . | quote }}
- name: PLANTSTORE_REDIS_REPLICA_ACK_TIMEOUT
  value: {{ .Values.config.redis.replicaAckTimeout | quote }}
{{- end }}
{{- end }}

{{/*
NetworkPolicy egress rules to DNS and to the store (the chart's Redis, or networkPolicy.egress.externalRedis),
the same for the API pods and the migration Job: NetworkPolicyEgressRule items at column 0, for nindent.
*/}}
{{- define "plantstore.networkPolicy.dnsEgress" -}}
{{- $dns := .Values.networkPolicy.egress.dns -}}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  {{- if or $dns.namespaceSelector $dns.podSelector }}
  to:
    - namespaceSelector:
        {{- toYaml ($dns.namespaceSelector | default dict) | nindent 8 }}
      {{- with $dns.podSelector }}
      podSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
  {{- end }}
{{- end }}

{{- define "plantstore.networkPolicy.storeEgress" -}}
{{- $np := .Values.networkPolicy }}
{{- $store := include "plantstore.store" . -}}
{{ include "plantstore.networkPolicy.dnsEgress" . }}
{{- if eq $store "redis" }}
- to:
    - podSelector:
        matchLabels:
          {{- include "plantstore.redis.selectorLabels" . | nindent 10 }}
  ports:
    - port: 6379
      protocol: TCP
    {{- if include "plantstore.redis.sentinel" . }}
    - port: 26379
      protocol: TCP
    {{- end }}
{{- else if eq $store "external" }}
{{- $ext := $np.egress.externalRedis }}
- ports:
    {{- range $ext.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- if or $ext.cidrs $ext.to }}
  to:
    {{- range $ext.cidrs }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
    {{- with $ext.to }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{/* Whether the pods mount the external Redis's CA bundle (externalRedis.tls.caSecret). */}}
{{- define "plantstore.redisCA.enabled" -}}
{{- $ext := .Values.externalRedis }}
{{- if and (eq (include "plantstore.store" .) "external") $ext.tls.enabled $ext.tls.caSecret }}true{{ end }}
{{- end }}

{{/* The volumeMount and the volume of that CA bundle (PLANTSTORE_REDIS_TLS_CA_FILE), for nindent. */}}
{{- define "plantstore.redisCA.volumeMount" -}}
- name: redis-ca
  mountPath: /etc/plantstore/redis-ca
  readOnly: true
{{- end }}

{{- define "plantstore.redisCA.volume" -}}
- name: redis-ca
  secret:
    secretName: {{ .Values.externalRedis.tls.caSecret }}
    items:
      - key: {{ .Values.externalRedis.tls.caSecretKey }}
        path: ca.crt
{{- end }}
