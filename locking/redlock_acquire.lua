-- Acquire one node's share of a Redlock lease and read the family's
-- fencing counter in the same atomic step.
-- KEYS[1] lock key, KEYS[2] the family's fence counter (same hash tag)
-- ARGV[1] value "<token-hex>|<replica>", ARGV[2] ttl in milliseconds
-- Returns {1, counter} when the key was set here, {0, current value} when
-- it is held (or is a done marker).
local cur = redis.call('GET', KEYS[1])
if cur then
  return {0, cur}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, redis.call('GET', KEYS[2]) or '0'}
