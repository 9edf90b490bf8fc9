-- Add an entry to a family's log (Node OpLogAdd).
-- KEYS[1] the log (a sorted set); ARGV[1] entry, ARGV[2] its score,
-- ARGV[3] an entry to remove first ('' none), ARGV[4] entries kept
-- (newest by score; 0 no bound), ARGV[5] lowest score kept (0 no floor).
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
