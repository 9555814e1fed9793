## sentinel.sh, the command (sh -c: no #! line) of a pod's Sentinel container: its configuration, to
## watch the master find-master.sh names, written where Sentinel rewrites it as it learns the set.
## POD_NAME and REDIS_PASSWORD: the container's environment. REDIS_DOMAIN (<StatefulSet>.<namespace>.svc),
## MASTER_NAME, QUORUM, DOWN_AFTER_MS and FAILOVER_TIMEOUT_MS (redis.sentinel.*): from the environment
## when run as this file; the chart writes them in (templates/_redis.tpl).
set -eu
umask 077
escaped=$(printf '%s' "$REDIS_PASSWORD" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')
me="$POD_NAME.$REDIS_DOMAIN"
master=$(sh /etc/redis/find-master.sh "$me")
cat > /run/sentinel/sentinel.conf <<EOF
port 26379
dir /run/sentinel
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $me
sentinel monitor $MASTER_NAME $master 6379 $QUORUM
sentinel down-after-milliseconds $MASTER_NAME $DOWN_AFTER_MS
sentinel failover-timeout $MASTER_NAME $FAILOVER_TIMEOUT_MS
sentinel parallel-syncs $MASTER_NAME 1
sentinel auth-pass $MASTER_NAME "$escaped"
sentinel sentinel-pass "$escaped"
requirepass "$escaped"
EOF
echo "sentinel: $me watches $master"
exec redis-server /run/sentinel/sentinel.conf --sentinel
