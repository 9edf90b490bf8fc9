-- Add an entry to a family's log (Node OpLogAdd).
-- KEYS[1] the log (a sorted set), KEYS[2] the fence register (a record of
-- the family; used when ARGV[6] is not '0'); ARGV[1] entry, ARGV[2] its
-- score, ARGV[3] an entry to remove first ('' none), ARGV[4] entries kept
-- (newest by score; 0 no bound), ARGV[5] lowest score kept (0 no floor),
-- ARGV[6] the fencing token of the lease the append is made under ('0'
-- not fenced), ARGV[7] '1': add only where no entry has the score.
-- Returns 1 added, 2 refused by a newer token in the register (nothing
-- changed), 0 an entry of the score was there (ARGV[7]; only the register
-- was raised).
if ARGV[6] and ARGV[6] ~= '0' then
  local token = tonumber(ARGV[6])
  local seen = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  if seen > token then
    return 2
  end
  if seen < token then
    redis.call('SET', KEYS[2], ARGV[6])
  end
end
if ARGV[7] == '1' and #redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[2], 'LIMIT', 0, 1) > 0 then
  return 0
end
if ARGV[3] ~= '' and ARGV[3] ~= ARGV[1] then
  redis.call('ZREM', KEYS[1], ARGV[3])
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if ARGV[5] ~= '0' then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[5])
end
local keep = tonumber(ARGV[4])
if keep > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -keep - 1)
end
return 1
