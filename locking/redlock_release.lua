-- Compare-and-release: where the key holds our value, delete it or, when a
-- done TTL is given, replace it by the done marker in the same step.
-- KEYS[1] lock key; ARGV[1] value; ARGV[2] done marker; ARGV[3] done ttl in
-- milliseconds ("0": plain delete).
-- Returns 1 when the key was ours, 0 otherwise. A done marker is also set
-- where the key is absent (expired, or the node restarted empty), so it
-- blocks the slot on as many nodes as possible; it never overwrites
-- another holder's value.
local cur = redis.call('GET', KEYS[1])
local doneTTL = tonumber(ARGV[3])
if cur == ARGV[1] then
  if doneTTL > 0 then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', doneTTL)
  else
    redis.call('DEL', KEYS[1])
  end
  return 1
end
if not cur and doneTTL > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', doneTTL)
end
return 0
