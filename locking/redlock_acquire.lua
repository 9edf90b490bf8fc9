-- Acquire one node's share of a Redlock lease and take part in the
-- family's fencing-token register, in one atomic step (Node OpAcquire).
-- KEYS[1] lock key, KEYS[2] the family's fence counter, KEYS[3] the live
-- key of a claim (only when ARGV[4] > 0); all share one hash tag.
-- ARGV[1] value "<token-hex>|<replica>", ARGV[2] ttl in milliseconds,
-- ARGV[3] proposed token, ARGV[4] hold in milliseconds (0: a plain lease).
-- Returns {status, value, counter before}: status 1 set here, 2 took over
-- the lease of an abandoned claim (value: the claim), 0 refused (value:
-- what holds it).
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
local status, found = 1, ''
if tonumber(ARGV[4]) > 0 then
  local live = redis.call('GET', KEYS[3])
  if live then
    return {0, live, fence}
  end
  local cur = redis.call('GET', KEYS[1])
  if cur then
    if string.sub(cur, 1, 5) == 'done|' then
      return {0, cur, fence}
    end
    status, found = 2, cur
  else
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
  end
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
elseif not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('GET', KEYS[1]), fence}
end
if tonumber(ARGV[3]) > fence then
  redis.call('SET', KEYS[2], ARGV[3])
end
return {status, found, fence}
