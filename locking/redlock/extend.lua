-- Compare-and-extend (Node OpExtend): renew the lease only where it still
-- holds our value and has not expired.
-- KEYS[1] lock key, KEYS[2] the family's lives hash and KEYS[3] its
-- claims hash (claims only); ARGV[1] value, ARGV[2] ttl in milliseconds,
-- ARGV[3] field ("": plain), ARGV[4] "1" (claims only): the work began,
-- so where the claim is this lease's own it becomes "started:<value>".
-- Returns 1 when extended, 0 when the lease is gone or someone else's.
-- servertime() is the node's clock (TIME), defined ahead of the script
-- (rediswire.go): read once per call, and once per fold in a batch.
local field = ARGV[3]
if field ~= '' then
  local live = redis.call('HGET', KEYS[2], field)
  if not live then
    return 0
  end
  local v, exp = string.match(live, '^(.*)|(%d+)$')
  local t = servertime()
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if v ~= ARGV[1] or tonumber(exp) <= now then
    return 0
  end
  redis.call('HSET', KEYS[2], field, ARGV[1] .. '|' .. (now + tonumber(ARGV[2])))
  if ARGV[4] == '1' and redis.call('HGET', KEYS[3], field) == ARGV[1] then
    redis.call('HSET', KEYS[3], field, 'started:' .. ARGV[1])
  end
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
