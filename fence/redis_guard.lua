-- slotlock fence: a write to Redis accepted only when its fencing token is
-- not lower than the highest token already accepted for the data key, the
-- check and the write in one atomic step.
--
-- KEYS[1] the fence key: holds the highest accepted token, in the same hash
--         slot as the data key (fence.FenceKey: "<key>:fence" when the key
--         has a hash tag, "{<key>}:fence" when it has none)
-- KEYS[2] the data key
-- ARGV[1] the token, decimal (SLOTLOCK_FENCING_TOKEN)
-- ARGV[2] the write: set | hset | xadd | none
-- ARGV[3..] its arguments:
--   set  VALUE [TTL_MS]       SET key VALUE [PX TTL_MS]
--   hset FIELD VALUE ...      HSET key FIELD VALUE ...
--   xadd FIELD VALUE ...      XADD key * FIELD VALUE ...
--   none                      only raise the fence
--
-- Returns {1, highest, result} when the write was done (highest is then the
-- token; result: "OK", the number of new fields, or the stream entry id),
-- {0, highest} when it was refused as stale. Nothing is written then.
--
-- Tokens are compared as decimal strings (shorter is lower, then by
-- digits), exact over the whole uint64 range where Lua numbers are not.
local token, op = ARGV[1], ARGV[2]
if not string.match(token, '^[1-9]%d*$') and token ~= '0' then
  return redis.error_reply('ERR fence: token must be a decimal integer without leading zeros, got "' .. token .. '"')
end
local highest = redis.call('GET', KEYS[1])
if highest then
  if #token < #highest or (#token == #highest and token < highest) then
    return {0, highest}
  end
end
local result
if op == 'set' then
  if #ARGV == 4 then
    result = redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  elseif #ARGV == 3 then
    result = redis.call('SET', KEYS[2], ARGV[3])
  else
    return redis.error_reply('ERR fence: set takes VALUE [TTL_MS]')
  end
  result = result['ok']
elseif op == 'hset' or op == 'xadd' then
  if #ARGV < 4 or #ARGV % 2 ~= 0 then
    return redis.error_reply('ERR fence: ' .. op .. ' takes FIELD VALUE pairs')
  end
  local args = {}
  for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
  if op == 'hset' then
    result = redis.call('HSET', KEYS[2], unpack(args))
  else
    result = redis.call('XADD', KEYS[2], '*', unpack(args))
  end
elseif op == 'none' then
  result = 'OK'
else
  return redis.error_reply('ERR fence: unknown write "' .. tostring(op) .. '" (set, hset, xadd, none)')
end
if highest ~= token then
  redis.call('SET', KEYS[1], token)
end
return {1, token, result}
