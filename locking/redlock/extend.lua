-- Compare-and-extend (Node OpExtend): renew the lease where it still
-- holds our value and has not expired, and spread it where it is absent.
-- KEYS[1] lock key (a claim's done-marker key), KEYS[2] the family's
-- lives hash and KEYS[3] its claims hash (claims only); ARGV[1] value,
-- ARGV[2] ttl in milliseconds, ARGV[3] field ("": plain), ARGV[4] "1"
-- (claims only): the work began, so where the claim is this lease's own
-- it becomes "started:<value>"; ARGV[5] when the renewal was sent (the
-- sender's clock, ms) and ARGV[6] how long it is fresh.
-- Returns 1 when extended, 2 when spread, 0 when the lease is gone or
-- someone else's.
--
-- Spread: a lease won on a bare majority (a race splits the nodes between
-- two acquirers; the loser undoes its share) is one node fault away from
-- a minority. Where nothing holds it — for a claim: no lease, no claim
-- and no done marker for the slot; for a plain lease: the key absent —
-- the renewal sets it, as the acquisition would have, while the request
-- is fresh by this node's clock (a renewal that queued on a frozen node
-- may run after the lease ended everywhere). It never replaces what
-- another holds, so it only adds a node to those that refuse a rival.
-- The claim is spread in its plain form, even with the start: the next
-- renewal confirms it there, and a spread that came after the run's end
-- (the end's done marker missed this node) leaves a leftover, never a
-- started claim that nothing will end.
-- servertime() is the node's clock (TIME), defined ahead of the script
-- (rediswire.go): read once per call, and once per fold in a batch.
local field = ARGV[3]
local function fresh(now)
  return ARGV[5] ~= '0' and now - tonumber(ARGV[5]) <= tonumber(ARGV[6])
end
local function nowms()
  local t = servertime()
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
if field ~= '' then
  local live = redis.call('HGET', KEYS[2], field)
  local now = nowms()
  if not live then
    if not fresh(now) or redis.call('HEXISTS', KEYS[3], field) == 1 or redis.call('EXISTS', KEYS[1]) == 1 then
      return 0
    end
    redis.call('HSET', KEYS[3], field, ARGV[1])
    redis.call('HSET', KEYS[2], field, ARGV[1] .. '|' .. (now + tonumber(ARGV[2])))
    return 2
  end
  local v, exp = string.match(live, '^(.*)|(%d+)$')
  if v ~= ARGV[1] or tonumber(exp) <= now then
    return 0
  end
  redis.call('HSET', KEYS[2], field, ARGV[1] .. '|' .. (now + tonumber(ARGV[2])))
  if ARGV[4] == '1' and redis.call('HGET', KEYS[3], field) == ARGV[1] then
    redis.call('HSET', KEYS[3], field, 'started:' .. ARGV[1])
  end
  return 1
end
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not cur and fresh(nowms()) and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 2
end
return 0
