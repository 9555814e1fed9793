{{/* The chart's Redis (redis.enabled): its topology, redis.conf, the scripts of files/redis/, its claim template. */}}

{{/*
The labels of the Redis data PVCs (the StatefulSet's volume claim template), as JSON: the selector labels, the
same as every chart before, and commonLabels. Never the chart's version nor anything else that changes with the
chart: Kubernetes refuses any change of a StatefulSet's volumeClaimTemplates, so such a label would fail every
upgrade. plantstore.validate compares them with the running StatefulSet's.
*/}}
{{- define "plantstore.redis.claimLabels" -}}
{{- $labels := deepCopy (.Values.commonLabels | default dict) }}
{{- range list "helm.sh/chart" "app.kubernetes.io/version" "app.kubernetes.io/managed-by" "app.kubernetes.io/part-of" }}{{ $_ := unset $labels . }}{{ end }}
{{- $_ := set $labels "app.kubernetes.io/name" (include "plantstore.name" .) }}
{{- $_ = set $labels "app.kubernetes.io/instance" .Release.Name }}
{{- $_ = set $labels "app.kubernetes.io/component" "redis" }}
{{- toJson $labels }}
{{- end }}

{{/*
The StorageClass of the Redis data PVCs: redis.persistence.storageClass, else global.storageClass; "-" (render
storageClassName "", no dynamic provisioning) or empty (leave it out: the cluster's default StorageClass) as
the values say.
*/}}
{{- define "plantstore.redis.storageClass" -}}
{{- .Values.redis.persistence.storageClass | default (.Values.global | default dict).storageClass | default "" }}
{{- end }}

{{/*
The Redis StatefulSet's volume claim template, which Kubernetes never lets change: when the release's StatefulSet
exists (lookup: helm install and upgrade; `helm template` sees none) and these values would change its labels
(commonLabels) or StorageClass, the render stops with what to do, before Helm changes anything, rather than
the API server refusing the StatefulSet halfway through the upgrade.
*/}}
{{- define "plantstore.redis.checkClaimTemplate" -}}
{{- $name := include "plantstore.redis.fullname" . }}
{{- $sts := lookup "apps/v1" "StatefulSet" .Release.Namespace $name | default dict }}
{{- range dig "spec" "volumeClaimTemplates" list $sts }}
{{- if eq (dig "metadata" "name" "" .) "data" }}
{{- $liveLabels := toJson (dig "metadata" "labels" dict .) }}
{{- $wantLabels := include "plantstore.redis.claimLabels" $ }}
{{- $spec := dig "spec" dict . }}
{{- $liveClass := "" }}
{{- if hasKey $spec "storageClassName" }}{{ $liveClass = get $spec "storageClassName" | default "-" }}{{ end }}
{{- $wantClass := include "plantstore.redis.storageClass" $ }}
{{- if or (ne $liveLabels $wantLabels) (ne $liveClass $wantClass) }}
{{- include "plantstore.fail" (printf "the Redis StatefulSet %s has PVC labels %s and storageClass %q, and these values would change them to %s and %q (commonLabels; redis.persistence.storageClass, else global.storageClass; \"\" is the cluster's default, \"-\" none): Kubernetes refuses any change of a StatefulSet's volumeClaimTemplates. Either set those values back, or recreate the StatefulSet and leave its pods and PVCs in place: `kubectl delete statefulset %s -n %s --cascade=orphan`, then upgrade again (the PVCs that exist keep their labels and StorageClass; new ones get these)" $name $liveLabels $liveClass $wantLabels $wantClass $name $.Release.Namespace) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Whether the chart's Redis runs as a master, replicas and Sentinels (redis.architecture sentinel). */}}
{{- define "plantstore.redis.sentinel" -}}
{{- if and .Values.redis.enabled (eq (toString (.Values.redis.architecture | default "standalone")) "sentinel") }}true{{ end }}
{{- end }}

{{/* Pods of the chart's Redis StatefulSet. */}}
{{- define "plantstore.redis.replicas" -}}
{{- if include "plantstore.redis.sentinel" . }}{{ .Values.redis.sentinel.replicas | int }}{{ else }}1{{ end }}
{{- end }}

{{/*
The DNS names of the Redis pods, space-separated, in ordinal order: <pod>.<headless Service>.<namespace>.svc,
which every pod of the namespace resolves (publishNotReadyAddresses: a pod still starting is found too).
*/}}
{{- define "plantstore.redis.hosts" -}}
{{- $name := include "plantstore.redis.fullname" . }}
{{- $hosts := list }}
{{- range $i := until (include "plantstore.redis.replicas" . | int) }}
{{- $hosts = append $hosts (printf "%s-%d.%s.%s.svc" $name $i $name $.Release.Namespace) }}
{{- end }}
{{- join " " $hosts }}
{{- end }}

{{/* config.redis.minReplicaAcks, or when null 1 with the chart's Sentinel and 0 otherwise. */}}
{{- define "plantstore.redis.minReplicaAcks" -}}
{{- $acks := .Values.config.redis.minReplicaAcks }}
{{- if kindIs "invalid" $acks }}{{ ternary 1 0 (eq (include "plantstore.redis.sentinel" .) "true") }}{{ else }}{{ $acks | int }}{{ end }}
{{- end }}

{{/* The Secret of the chart's Redis password: redis.auth.existingSecret, else the one the hook Job makes. */}}
{{- define "plantstore.redis.secretName" -}}
{{- .Values.redis.auth.existingSecret | default (include "plantstore.redis.fullname" .) }}
{{- end }}

{{/* An EnvVar of the chart's Redis password, at column 0 for nindent. Call with (list $ name). */}}
{{- define "plantstore.redis.passwordEnv" -}}
- name: {{ index . 1 }}
  valueFrom:
    secretKeyRef:
      name: {{ include "plantstore.redis.secretName" (index . 0) }}
      key: {{ (index . 0).Values.redis.auth.existingSecretKey }}
{{- end }}

{{/* Whether the hook Job generates the Redis password (the chart's Redis, no redis.auth.existingSecret). */}}
{{- define "plantstore.redis.passwordGenerated" -}}
{{- if and .Values.redis.enabled (not .Values.redis.auth.existingSecret) }}true{{ end }}
{{- end }}

{{/*
Whether the redis.roll hook rolls the chart's Redis: Sentinel mode with redis.updateStrategy RollingUpdate.
The StatefulSet is then OnDelete, since its controller restarts the highest ordinal first, wherever the
master is, which may hand the master over twice and restart it before its replicas.
*/}}
{{- define "plantstore.redis.roll.enabled" -}}
{{- if and (include "plantstore.redis.sentinel" .) (eq (dig "updateStrategy" "type" "RollingUpdate" .Values.redis) "RollingUpdate") }}true{{ end }}
{{- end }}

{{/*
maxmemory of the chart's Redis in bytes: redis.maxmemory when set, else three quarters of the
container's memory limit (values.yaml says why), else 0 (no limit). The limit is a Kubernetes
quantity: a number, with or without a binary (Ki..Ti) or decimal (k..T) suffix.
*/}}
{{- define "plantstore.redis.maxmemory" -}}
{{- $set := toString (.Values.redis.maxmemory | default "") -}}
{{- $limit := toString (dig "limits" "memory" "" (.Values.redis.resources | default dict)) -}}
{{- if ne $set "" -}}
{{ $set }}
{{- else if eq $limit "" -}}
0
{{- else -}}
{{- $quantity := "^([0-9]+(\\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$" -}}
{{- if not (regexMatch $quantity $limit) -}}
{{- fail (printf "redis.resources.limits.memory %q: cannot derive redis.maxmemory from it (a number with an optional Ki, Mi, Gi, Ti, k, M, G or T suffix); set redis.maxmemory" $limit) -}}
{{- end -}}
{{- $units := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- $bytes := mulf (regexReplaceAll $quantity $limit "${1}" | float64) (get $units (regexReplaceAll $quantity $limit "${3}")) -}}
{{- mulf $bytes 0.75 | floor | int64 -}}
{{- end -}}
{{- end }}

{{/*
redis.conf of the chart's Redis. Durability: the append-only file (AOF) logs every write and is
replayed at start; with appendfsync always (the default) Redis writes and fsyncs it before it answers,
so no acknowledged plant is lost to a crash of Redis or of the node. everysec fsyncs once a second and,
while a slow fsync runs, postpones the write past the answer: up to about two seconds of acknowledged
plants can then be lost. The password is not here: the container writes it to /run/redis/auth.conf (memory-backed
emptyDir) from the Secret at start, so it never appears in a ConfigMap or on a command line.
*/}}
{{- define "plantstore.redis.conf" -}}
bind * -::*
port 6379
protected-mode yes
dir /data
appendonly yes
appendfilename "appendonly.aof"
appenddirname "appendonlydir"
appendfsync {{ .Values.redis.appendfsync }}
aof-use-rdb-preamble yes
maxmemory {{ include "plantstore.redis.maxmemory" . }}
# Plants are data, not a cache: refuse writes rather than evict.
maxmemory-policy noeviction
include /run/redis/auth.conf
{{- if include "plantstore.redis.sentinel" . }}
# Every server may become master: the Sentinels pick among equals.
replica-priority 100
# A replica that must copy the whole dataset (the old master of a handover, a restarted server) gets
# it at once. Redis's default waits 5 seconds for more replicas to share the transfer, and the
# Sentinel leading a failover meanwhile holds back its announcement of the new master until that
# replica has its copy: clients listening to it kept writing to the old master for those 5 seconds.
repl-diskless-sync-delay 0
{{- with .Values.redis.sentinel }}
{{- if .minReplicasToWrite }}
# A master that fewer replicas have heard from within the lag refuses writes from any client: cut off
# from its replicas (a partition), it stops taking writes that the failover beyond the cut would drop.
min-replicas-to-write {{ .minReplicasToWrite }}
min-replicas-max-lag {{ .minReplicasMaxLag }}
{{- end }}
{{- end }}
# replicaof (unless this pod starts as the master) and replica-announce-ip, written at start.
include /run/redis/replication.conf
{{- end }}
{{- end }}

{{/*
A script of files/redis/ as the pods get it. The file is plain shell that takes its settings from the
environment ($REDIS_HOSTS, ...), so that it runs, and is tested, as it is; the chart writes their values in
place of those references instead (.values: a text of the file and the value that replaces it, none of them
part of another), and leaves out the file's ## lines, its documentation: the ConfigMap holds what it held
when the scripts were templates, and its checksum restarts no Redis. A text the file lacks fails the render.
Call with (dict "context" $ "file" "find-master.sh" "values" dict).
*/}}
{{- define "plantstore.redis.script" -}}
{{- $text := regexReplaceAll "(?m)^##.*\n" (.context.Files.Get (printf "files/redis/%s" .file)) "" | trimSuffix "\n" }}
{{- range $from, $to := .values }}
{{- if not (contains $from $text) }}{{ fail (printf "files/redis/%s has no %s" $.file $from) }}{{ end }}
{{- $text = replace $from (toString $to) $text }}
{{- end }}
{{- $text }}
{{- end }}

{{/* files/redis/find-master.sh: the master a starting server replicates and its Sentinel watches. */}}
{{- define "plantstore.redis.findMaster" -}}
{{- $hosts := include "plantstore.redis.hosts" . }}
{{- $downAfter := .Values.redis.sentinel.downAfterMilliseconds | int }}
{{- include "plantstore.redis.script" (dict "context" . "file" "find-master.sh" "values" (dict
  "$REDIS_HOSTS" $hosts "${REDIS_HOSTS%% *}" (first (splitList " " $hosts)) "$MASTER_NAME" .Values.redis.sentinel.masterName
  "$DOWN_AFTER_MS" $downAfter "$((DOWN_AFTER_MS / 2))" (div $downAfter 2))) }}
{{- end }}

{{/* files/redis/switchover.sh: the preStop of a server, which hands the master over before it stops. */}}
{{- define "plantstore.redis.switchover" -}}
{{- include "plantstore.redis.script" (dict "context" . "file" "switchover.sh" "values" (dict
  "$REDIS_HOSTS" (include "plantstore.redis.hosts" .) "$MASTER_NAME" .Values.redis.sentinel.masterName)) }}
{{- end }}
