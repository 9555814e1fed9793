## redis.sh, the command (sh -c: no #! line) of a Sentinel-mode server's container (a standalone one's is
## in redis-statefulset.yaml): the password, and the replication find-master.sh decides, for redis.conf.
## POD_NAME, REDIS_PASSWORD: the container's environment. REDIS_DOMAIN (<StatefulSet>.<namespace>.svc):
## from the environment when run as this file; the chart writes it in (templates/_redis.tpl).
set -eu
# requirepass from the environment into a file on the memory-backed emptyDir that
# redis.conf includes: the password never reaches the command line (ps).
umask 077
escaped=$(printf '%s' "$REDIS_PASSWORD" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')
printf 'requirepass "%s"\nmasterauth "%s"\n' "$escaped" "$escaped" > /run/redis/auth.conf
# A replica of the master the Sentinels name (the first pod's in a new set), announced
# by its DNS name, which outlives its IP address.
me="$POD_NAME.$REDIS_DOMAIN"
master=$(sh /etc/redis/find-master.sh "$me")
{
  echo "replica-announce-ip $me"
  if [ "$master" != "$me" ]; then echo "replicaof $master 6379"; fi
} > /run/redis/replication.conf
echo "redis: $me starts as $( [ "$master" = "$me" ] && echo master || echo "replica of $master")"
exec redis-server /etc/redis/redis.conf
