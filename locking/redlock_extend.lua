-- Compare-and-extend: reset the TTL only where the key still holds our value.
-- KEYS[1] lock key; ARGV[1] value; ARGV[2] ttl in milliseconds.
-- Returns 1 when extended, 0 when the key is gone or someone else's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
