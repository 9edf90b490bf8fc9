-- Compare-and-release (Node OpRelease): where the lease holds our value,
-- delete it or, when a done TTL is given, turn the key into the done
-- marker in the same step.
-- KEYS[1] lock key, KEYS[2] live key (claims only); ARGV[1] value,
-- ARGV[2] done marker, ARGV[3] done ttl in milliseconds ("0": plain
-- delete), ARGV[4] hold ("0": a plain lease).
-- Returns 1 when the lease was ours here, 0 otherwise. A done marker is
-- also set where the key is absent (expired, or the node restarted empty),
-- so it blocks the slot on as many nodes as possible, and, for a claim
-- whose live lease is ours, over the abandoned claim it took over; it never
-- overwrites a done marker or another holder's live lease.
local cur = redis.call('GET', KEYS[1])
local doneTTL = tonumber(ARGV[3])
local ours = cur == ARGV[1]
local took = false
if tonumber(ARGV[4]) > 0 and redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
  took = not ours and cur and string.sub(cur, 1, 5) ~= 'done|'
  ours = true
end
if doneTTL > 0 then
  if cur == ARGV[1] or not cur or took then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', doneTTL)
  end
elseif cur == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
if ours then
  return 1
end
return 0
