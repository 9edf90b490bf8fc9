-- Acquire one node's share of a Redlock lease and take part in the
-- family's fencing-token register, in one atomic step.
-- KEYS[1] lock key, KEYS[2] the family's fence counter (same hash tag)
-- ARGV[1] value "<token-hex>|<replica>", ARGV[2] ttl in milliseconds,
-- ARGV[3] proposed token (the caller's last known token + 1)
-- Returns {1, counter before} when the key was set here (the counter is
-- then raised to the proposal, max-assign), {0, current value, counter}
-- when it is held (or is a done marker).
-- SET NX first: the common (winning) path costs three calls.
local fence = redis.call('GET', KEYS[2]) or '0'
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('GET', KEYS[1]), fence}
end
if tonumber(ARGV[3]) > (tonumber(fence) or 0) then
  redis.call('SET', KEYS[2], ARGV[3])
end
return {1, fence}
