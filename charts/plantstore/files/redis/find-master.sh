#!/bin/sh
## find-master.sh HOST: the host of the current master as another pod's Sentinel names it, for the
## Redis server and the Sentinel of the pod HOST as they start (redis.architecture sentinel).
##
## Where no Sentinel answers, a server that says it is master is the master: the first pod of a
## standalone Redis upgraded to this set, still running its old template without a Sentinel, which
## holds the plants. Only when no other server exists (their names do not resolve: a new set, whose
## pods start one after the other) is it the first pod's. A server that exists but neither answers
## (still starting, or not reachable yet) is asked again for 45 seconds (within the liveness probe's
## patience); then the script fails, and the container with it, rather than start a second master
## beside the one the Sentinels follow.
##
## When the Sentinels still name this pod, it was the master and has been down: it starts as the
## master again only if no failover can begin. Once a Sentinel has gone half its down-after without
## an answer, or already reports the master down, a quorum of them will promote a replica: a master
## started meanwhile would acknowledge writes that the promotion then drops (the replica promoted
## stopped copying it). So the script waits for the failover and names the new master. A Sentinel
## that cannot reach its quorum (CKQUORUM) cannot fail over and does not hold the start back.
##
## REDIS_HOSTS (the pods' DNS names in ordinal order), MASTER_NAME and DOWN_AFTER_MS (redis.sentinel.*):
## from the environment when run as this file; the chart writes them in (templates/_redis.tpl).
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
  for host in $REDIS_HOSTS; do
    [ "$host" = "$me" ] && continue
    answer=$(timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL get-master-addr-by-name $MASTER_NAME 2>&1 | head -n 1)
    case $answer in
      *"Name or service not known"* | *"Name does not resolve"* | *"No address associated"*) ;;
      "" | *" "* | ERR* | NOAUTH* | WRONGPASS*) unanswered="$unanswered $host" ;;
      "$me") naming_me="$naming_me $host" ;;
      *) echo "$answer"; exit 0 ;;
    esac
  done
  if [ -n "$naming_me" ]; then
    for host in $naming_me; do
      timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL ckquorum $MASTER_NAME 2>&1 | grep -q '^OK' || continue
      state=$(timeout 3 redis-cli -h "$host" -p 26379 --raw SENTINEL master $MASTER_NAME 2>/dev/null)
      flags=$(printf '%s\n' "$state" | field flags)
      since=$(printf '%s\n' "$state" | field last-ok-ping-reply)
      case ",$flags," in
        *,s_down,* | *,o_down,* | *,failover_in_progress,*) failing_over="$failing_over $host($flags)" ;;
        *) [ "${since:-$DOWN_AFTER_MS}" -lt $((DOWN_AFTER_MS / 2)) ] || failing_over="$failing_over $host(no answer for ${since:-?}ms)" ;;
      esac
    done
    [ -z "$failing_over" ] && { echo "$me"; exit 0; }
    echo "find-master: the Sentinels still name $me but will fail over:$failing_over; waiting for the new master" >&2
  elif [ -z "$unanswered" ]; then
    echo ${REDIS_HOSTS%% *}
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
