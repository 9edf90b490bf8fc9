-- The family's pause register (Node OpPause): a versioned value, written
-- only over an older version, so that the newest pause or resume wins on
-- every node whatever order the writes arrive in.
-- KEYS[1] register; ARGV[1] value "<version>|<p or r>|<until ms>|<by>|<reason>",
-- ARGV[2] its version (0: only read).
-- Returns {1, value} when set here, {0, value it holds} otherwise.
local cur = redis.call('GET', KEYS[1]) or ''
local v = tonumber(string.match(cur, '^(%d+)|')) or 0
if tonumber(ARGV[2]) > v then
  redis.call('SET', KEYS[1], ARGV[1])
  return {1, ARGV[1]}
end
return {0, cur}
