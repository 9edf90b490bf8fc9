-- Max-assign (Node OpMaxSet): raise KEYS[1] to ARGV[1] unless it already
-- holds more. Used for records. No TTL.
-- Returns the value the key holds afterwards.
local v = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if v > cur then
  redis.call('SET', KEYS[1], ARGV[1])
  return v
end
return cur
