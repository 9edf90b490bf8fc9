-- Fencing-token write-back (Node OpFence): set the counter to the token
-- where it is lower. A token is handed out only when this succeeded on a
-- majority, so no two leases of a family get the same token.
-- KEYS[1] counter; ARGV[1] token.
-- Returns {1, token} when set here, {0, counter} when it held as much.
local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local t = tonumber(ARGV[1])
if t > cur then
  redis.call('SET', KEYS[1], ARGV[1])
  return {1, t}
end
return {0, cur}
