#!/bin/sh
## switchover.sh HOST, the preStop of the Redis server of the pod HOST (redis.architecture sentinel): a
## master about to stop (a drain, a rollout, a scale-down) hands over first. It pauses writes (none is
## acknowledged from then on), waits until every other server is an online replica holding all it has
## (so the replica promoted holds every acknowledged plant; if one is not within 10 s it hands nothing
## over and unpauses the writes), asks another pod's Sentinel to fail over (this pod's is stopping
## too; one in TILT only when none is out of it), again while the Sentinels are still completing an
## earlier failover, and ends, writes still paused, once every Sentinel has the promoted replica on
## record as the master, at most 20 seconds in all, closing its clients' connections so that they
## ask the Sentinels again; clients meanwhile wait or get 503s for a second or two instead of the
## down-after window. A replica stops as it is.
##
## REDIS_HOSTS (the pods' DNS names in ordinal order) and MASTER_NAME (redis.sentinel.masterName):
## from the environment when run as this file; the chart writes them in (templates/_redis.tpl).
set -u
# The password as the Secret holds it now (its volume follows a rotation; the environment keeps the
# value the container started with).
[ -r /etc/redis-auth/password ] && { REDISCLI_AUTH=$(cat /etc/redis-auth/password); export REDISCLI_AUTH; }
me=$1
# say: a step, with the time (to the millisecond where date knows %N: GNU's does, busybox's prints it
# as is), for the pod's log: a handover slower than its few seconds shows which step took them.
say() {
  t=$(date -u +%H:%M:%S.%3N)
  case $t in *N) t=${t%.*} ;; esac
  echo "switchover: $t $*"
}
role() { redis-cli -h 127.0.0.1 --raw info replication | tr -d '\r' | sed -n 's/^role://p'; }
[ "$(role)" = master ] || exit 0
start=$(date +%s)
end=$((start + 20))
redis-cli -h 127.0.0.1 CLIENT PAUSE 20000 WRITE >/dev/null
say "$me: writes paused"
# A Sentinel picks the replica to promote by the offsets it last saw (up to
# 10 s old), and a create answered 200 was acknowledged by one replica (WAIT),
# not necessarily that one: so every other server must first be an online
# replica that has acknowledged this master's whole offset (each acknowledges
# every second; no write moves it now). One that is not within 10 s, still
# syncing or away, could be promoted without them: then no handover is
# asked, the writes go on, and once this server stops the Sentinels fail
# over as for a lost master, to the replica with the largest offset.
others=$(($(echo $REDIS_HOSTS | wc -w) - 1))
caught_up() {
  redis-cli -h 127.0.0.1 --raw info replication | tr -d '\r' | awk -v want="$others" '
    /^master_repl_offset:/ { sub(/^[^:]*:/, ""); off = $0 }
    /^slave[0-9]+:/ {
      sub(/^[^:]*:/, ""); st = ""; o = ""; n = split($0, kv, ",")
      for (i = 1; i <= n; i++) { split(kv[i], p, "="); if (p[1] == "state") st = p[2]; if (p[1] == "offset") o = p[2] }
      if (st == "online") { count++; acked[count] = o }
    }
    END { if (count < want) exit 1; for (i = 1; i <= count; i++) if (acked[i] + 0 < off + 0) exit 1 }'
}
synced=""
while [ -z "$synced" ] && [ "$(date +%s)" -lt $((start + 10)) ]; do
  if caught_up; then synced=1; else sleep 0.2; fi
done
if [ -z "$synced" ]; then
  redis-cli -h 127.0.0.1 CLIENT UNPAUSE >/dev/null
  say "$me hands over to none (writes unpaused): not every replica online and holding all it has after 10s"
  exit 0
fi
say "every replica holds all $me has"
# A Sentinel refuses while an earlier failover is still being completed
# (INPROG): ask again until one accepts. One in TILT (its timer ran 2 s or
# more late: a stalled machine) accepts but starts only when TILT ends, up
# to 30 s later: it is asked only while no other Sentinel is out of TILT.
asked=""
while [ -z "$asked" ] && [ "$(date +%s)" -lt "$end" ]; do
  calm="" tilted=""
  for host in $REDIS_HOSTS; do
    [ "$host" = "$me" ] && continue
    case $(timeout 2 redis-cli -h "$host" -p 26379 --raw INFO sentinel 2>/dev/null | tr -d '\r' | grep '^sentinel_tilt:') in
      sentinel_tilt:0) calm="$calm $host" ;;
      *) tilted="$tilted $host" ;;
    esac
  done
  [ -z "$calm" ] || [ -z "$tilted" ] || say "Sentinels in TILT or not answering, not asked:$tilted"
  for host in ${calm:-$tilted}; do
    reply=$(timeout 3 redis-cli -h "$host" -p 26379 SENTINEL failover $MASTER_NAME 2>&1)
    [ "$reply" = OK ] && { asked=$host; break; }
    say "the Sentinel of $host answered '${reply:-nothing within 3s}'"
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
new="" first=""
[ -z "$asked" ] || say "failover asked of the Sentinel of $asked"
while [ -n "$asked" ] && [ -z "$new" ] && [ "$(date +%s)" -lt "$end" ]; do
  agreed="" stale=""
  for host in $REDIS_HOSTS; do
    [ "$host" = "$me" ] && continue
    rec=$(timeout 2 redis-cli -h "$host" -p 26379 --raw SENTINEL master $MASTER_NAME 2>/dev/null | tr -d '\r' |
      awk 'NR % 2 == 1 {k = $0; next} k == "ip" {ip = $0} END {print ip}')
    [ -n "$rec" ] || continue
    if [ "$rec" = "$me" ]; then stale=$host; else agreed=$rec; fi
  done
  [ -n "$agreed" ] && [ -z "$first" ] && { first=$agreed; say "$first on record as the master (Sentinels still naming $me: ${stale:-none})"; }
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
say "$me hands over to ${new:-none (writes unpaused)} after $(($(date +%s) - start))s (failover asked of ${asked:-no Sentinel})"
