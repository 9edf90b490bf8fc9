#!/bin/sh
# A slotlock exec job's fenced write to Redis: SET $KEY to $VALUE only if
# this run's fencing token is not lower than the highest one already
# accepted for $KEY. A stale run (one that was frozen past its lease while
# a newer run wrote) writes nothing and exits 75.
#
#   params:
#     command: [sh, /etc/slotlock/redis-set.sh]
#     env: {REDIS_URL: "redis://cache:6379", KEY: "{report:daily}:latest",
#           VALUE: "...", GUARD: /etc/slotlock/redis_guard.lua}
#
# GUARD is fence/redis_guard.lua from slotlock's source (fence.RedisScript),
# shipped beside this script. The fence key must be in the key's hash slot:
# "<key>:fence" when the key has a hash tag ({...}), "{<key>}:fence" when it
# has none (fence.FenceKey). SLOTLOCK_FENCING_TOKEN comes from slotlock.
set -eu
case "$KEY" in
*"{"[!}]*"}"*) fence_key="$KEY:fence" ;; # a hash tag (as Redis finds it for all but odd keys like "{}{x}")
*) fence_key="{$KEY}:fence" ;;
esac
# -e: a Redis error (an unreachable server, a bad token) exits non-zero.
reply=$(redis-cli -e -u "$REDIS_URL" EVAL "$(cat "$GUARD")" 2 "$fence_key" "$KEY" \
  "$SLOTLOCK_FENCING_TOKEN" set "$VALUE")
# The reply: 1, the token, OK when written; 0 and the highest token when
# refused.
set -- $reply
if [ "$1" != 1 ]; then
  echo "stale fencing token $SLOTLOCK_FENCING_TOKEN for $KEY: token $2 was already accepted (a newer run wrote first); nothing written" >&2
  exit 75
fi
