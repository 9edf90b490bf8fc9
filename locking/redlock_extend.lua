-- Compare-and-extend (Node OpExtend): reset the lease's TTL only where it
-- still holds our value.
-- KEYS[1] lock key, KEYS[2] live key (claims only); ARGV[1] value,
-- ARGV[2] ttl in milliseconds, ARGV[3] hold in milliseconds (0: plain).
-- Returns 1 when extended, 0 when the lease is gone or someone else's.
if tonumber(ARGV[3]) > 0 then
  if redis.call('GET', KEYS[2]) ~= ARGV[1] then
    return 0
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
  end
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
