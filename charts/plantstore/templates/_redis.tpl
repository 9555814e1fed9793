{{/* The chart's Redis (redis.enabled): its topology, redis.conf, its scripts, its claim template. */}}

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

{{- define "plantstore.redis.secretName" -}}
{{- .Values.redis.auth.existingSecret | default (include "plantstore.redis.fullname" .) }}
{{- end }}

{{- define "plantstore.redis.secretKey" -}}
{{- .Values.redis.auth.existingSecretKey }}
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
find-master.sh HOST: the host of the current master as another pod's Sentinel names it. Where no Sentinel
answers, a server that says it is master is the master: the first pod of a standalone Redis upgraded to
this set, still running its old template without a Sentinel, which holds the plants. Only when no other
server exists (their names do not resolve: a new set, whose pods start one after the other) is it the
first pod's. A server that exists but neither answers (still starting, or not reachable yet) is asked
again for 45 seconds (within the liveness probe's patience); then the script fails, and the container
with it, rather than start a second master beside the one the Sentinels follow.

When the Sentinels still name this pod, it was the master and has been down: it starts as the master
again only if no failover can begin. Once a Sentinel has gone half its down-after without an answer, or
already reports the master down, a quorum of them will promote a replica: a master started meanwhile
would acknowledge writes that the promotion then drops (the replica promoted stopped copying it). So the
script waits for the failover and names the new master. A Sentinel that cannot reach its quorum
(CKQUORUM) cannot fail over and does not hold the start back.
*/}}
{{- define "plantstore.redis.findMaster" -}}
{{- $s := .Values.redis.sentinel -}}
#!/bin/sh
set -u
# The password as the Secret holds it now (its volume follows a rotation; the environment keeps the
# value the container started with).
[ -r /etc/redis-auth/password ] && { REDISCLI_AUTH=$(cat /etc/redis-auth/password); export REDISCLI_AUTH; }
me=$1
end=$(($(date +%s) + 45))
field() { sed -n "/^$1\$/{n;p;}"; }
while :; do
  unanswered=""
  naming_me=""
  failing_over=""
  for host in {{ include "plantstore.redis.hosts" . }}; do
    [ "$host" = "$me" ] && continue
    answer=$(timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL get-master-addr-by-name {{ $s.masterName }} 2>&1 | head -n 1)
    case $answer in
      *"Name or service not known"* | *"Name does not resolve"* | *"No address associated"*) ;;
      "" | *" "* | ERR* | NOAUTH* | WRONGPASS*) unanswered="$unanswered $host" ;;
      "$me") naming_me="$naming_me $host" ;;
      *) echo "$answer"; exit 0 ;;
    esac
  done
  if [ -n "$naming_me" ]; then
    for host in $naming_me; do
      timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL ckquorum {{ $s.masterName }} 2>&1 | grep -q '^OK' || continue
      state=$(timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL master {{ $s.masterName }} 2>/dev/null)
      flags=$(printf '%s\n' "$state" | field flags)
      since=$(printf '%s\n' "$state" | field last-ok-ping-reply)
      case ",$flags," in
        *,s_down,* | *,o_down,* | *,failover_in_progress,*) failing_over="$failing_over $host($flags)" ;;
        *) [ "${since:-{{ $s.downAfterMilliseconds | int }}}" -lt {{ div ($s.downAfterMilliseconds | int) 2 }} ] || failing_over="$failing_over $host(no answer for ${since:-?}ms)" ;;
      esac
    done
    [ -z "$failing_over" ] && { echo "$me"; exit 0; }
    echo "find-master: the Sentinels still name $me but will fail over:$failing_over; waiting for the new master" >&2
  elif [ -z "$unanswered" ]; then
    echo {{ first (splitList " " (include "plantstore.redis.hosts" .)) }}
    exit 0
  else
    for host in $unanswered; do
      role=$(timeout 3 redis-cli -h "$host" -p 6379 --raw info replication 2>/dev/null | tr -d '\r' | sed -n 's/^role://p')
      [ "$role" = master ] && { echo "$host"; exit 0; }
    done
  fi
  [ "$(date +%s)" -lt "$end" ] || break
  sleep 1
done
echo "find-master: no master named for 45s (Sentinels failing over:${failing_over:- none}; unanswered:${unanswered:- none}): not starting" >&2
exit 1
{{- end }}

{{/*
switchover.sh HOST, the preStop of a server: a master about to stop (a drain, a rollout, a scale-down)
hands over first. It pauses writes (none is acknowledged from then on, so the replica promoted holds
every acknowledged plant), asks another pod's Sentinel to fail over (this pod's is stopping too), again
while the Sentinels are still completing an earlier failover, and ends, writes still paused, once every
Sentinel has the promoted replica on record as the master, at most 20 seconds in all, closing its clients'
connections so that they ask the Sentinels again; clients meanwhile wait or get 503s for a second or two
instead of the down-after window. A replica stops as it is.
*/}}
{{- define "plantstore.redis.switchover" -}}
#!/bin/sh
set -u
# The password as the Secret holds it now (its volume follows a rotation; the environment keeps the
# value the container started with).
[ -r /etc/redis-auth/password ] && { REDISCLI_AUTH=$(cat /etc/redis-auth/password); export REDISCLI_AUTH; }
me=$1
role() { redis-cli -h 127.0.0.1 --raw info replication | tr -d '\r' | sed -n 's/^role://p'; }
[ "$(role)" = master ] || exit 0
start=$(date +%s)
end=$((start + 20))
redis-cli -h 127.0.0.1 CLIENT PAUSE 20000 WRITE >/dev/null
# A Sentinel refuses while an earlier failover is still being completed
# (INPROG): ask again until one accepts.
asked=""
while [ -z "$asked" ] && [ "$(date +%s)" -lt "$end" ]; do
  for host in {{ include "plantstore.redis.hosts" . }}; do
    [ "$host" = "$me" ] && continue
    [ "$(timeout 3 redis-cli -h "$host" -p 26379 SENTINEL failover {{ .Values.redis.sentinel.masterName }} 2>&1)" = OK ] && { asked=$host; break; }
  done
  [ -n "$asked" ] || sleep 1
done
# Done when every Sentinel that answers has another master on record (the
# one asked switches at the failover's end, the others from its hellos):
# clients asking any of them find the new master. The writes stay paused
# until the pod stops, so none is taken by a master about to stop; the
# Sentinels convert it only after seeing it report the wrong role for a
# while, past the pause, and a REPLICAOF here would start a full sync whose
# first AOF rewrite makes Redis refuse the SIGTERM that follows.
new=""
while [ -n "$asked" ] && [ -z "$new" ] && [ "$(date +%s)" -lt "$end" ]; do
  agreed="" stale=""
  for host in {{ include "plantstore.redis.hosts" . }}; do
    [ "$host" = "$me" ] && continue
    rec=$(timeout 2 redis-cli -h "$host" -p 26379 --raw SENTINEL master {{ .Values.redis.sentinel.masterName }} 2>/dev/null | tr -d '\r' |
      awk 'NR % 2 == 1 {k = $0; next} k == "ip" {ip = $0} END {print ip}')
    [ -n "$rec" ] || continue
    if [ "$rec" = "$me" ]; then stale=$host; else agreed=$rec; fi
  done
  [ -n "$agreed" ] && [ -z "$stale" ] && new=$agreed
  [ -n "$new" ] || sleep 0.2
done
# Its clients (the API pods' pools) would wait on the paused writes until the
# pod stops: closed now, they ask the Sentinels, which all name the new one.
if [ -n "$new" ]; then
  redis-cli -h 127.0.0.1 CLIENT KILL TYPE normal >/dev/null
else
  redis-cli -h 127.0.0.1 CLIENT UNPAUSE >/dev/null
fi
echo "switchover: $me hands over to ${new:-none (writes unpaused)} after $(($(date +%s) - start))s (failover asked of ${asked:-no Sentinel})"
{{- end }}
