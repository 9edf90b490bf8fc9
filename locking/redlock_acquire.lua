-- Acquire one node's share of a Redlock lease and take part in the
-- family's fencing-token register, in one atomic step (Node OpAcquire).
-- KEYS[1] lock key (a claim's done-marker key), KEYS[2] the family's fence
-- counter, KEYS[3] and KEYS[4] the family's claims and lives hashes (claims
-- only), KEYS[5] the family's pause register (claims only); all share one
-- hash tag; KEYS[6] (claims only) a plain lease of the family (the job
-- lease), set with the claim when ARGV[5] is set; the last key (KEYS[3]
-- for a plain lease, KEYS[7] for a claim) the tombstone an undo of this
-- very value would have left: where it exists, nothing is done.
-- ARGV[1] value "<token-hex>|<replica>", ARGV[2] ttl in milliseconds,
-- ARGV[3] proposed token, ARGV[4] field ("": a plain lease), ARGV[5]
-- (claims only) the KEYS[6] lease's value: where the claim is new here
-- (status 1) and the request is fresh (this node's clock at most ARGV[7]
-- ms past ARGV[6], the sender's clock when it sent it), that lease is SET
-- NX PX ttl in the same step, and the reply's seventh element is 1 where
-- it was set.
-- Returns {status, value, counter, orphan field, orphan claim, pause
-- register (claims; also when refused), also, claim}; where the lease was
-- set, the counter was raised to max(counter + 1, proposal) and is
-- returned as raised, else as found:
-- status 1 set here, 2 took over the lease of an abandoned claim (value:
-- the claim), 0 refused (value: what holds it). Claims are returned as
-- stored: "started:<value>" once their owner confirmed that its work
-- began (the extend script). Refused by a live lease, the eighth element
-- is the claim under that lease, whoever's lease it is ("" none).
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if redis.call('EXISTS', KEYS[#KEYS]) == 1 then
  -- Undone before it ran here (a request that queued on a frozen node):
  -- it changes nothing.
  return {0, '', fence, '', '', ''}
end
local status, found, orphan, orphanValue, pause, also = 1, '', '', '', '', 0
local field = ARGV[4]
if field ~= '' then
  pause = redis.call('GET', KEYS[5]) or ''
  local done = redis.call('GET', KEYS[1])
  if done then
    return {0, done, fence, '', '', pause}
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local live = redis.call('HGET', KEYS[4], field)
  if live then
    local v, exp = string.match(live, '^(.*)|(%d+)$')
    if tonumber(exp) > now then
      return {0, v, fence, '', '', pause, 0, redis.call('HGET', KEYS[3], field) or ''}
    end
  end
  local claim = redis.call('HGET', KEYS[3], field)
  if claim then
    status, found = 2, claim
  else
    redis.call('HSET', KEYS[3], field, ARGV[1])
  end
  redis.call('HSET', KEYS[4], field, ARGV[1] .. '|' .. (now + tonumber(ARGV[2])))
  if status == 1 and ARGV[5] and ARGV[5] ~= '' and now - tonumber(ARGV[6]) <= tonumber(ARGV[7]) and
      redis.call('SET', KEYS[6], ARGV[5], 'NX', 'PX', ARGV[2]) then
    also = 1
  end
  -- Abandoned claims of other keys: one of them, picked by our random
  -- token so that callers spread over them, sorted so that every store
  -- picks alike.
  local claims = redis.call('HGETALL', KEYS[3])
  local orphans, values = {}, {}
  for i = 1, #claims, 2 do
    if claims[i] ~= field then
      local l = redis.call('HGET', KEYS[4], claims[i])
      if not l or tonumber(string.match(l, '|(%d+)$')) <= now then
        orphans[#orphans + 1] = claims[i]
        values[claims[i]] = claims[i + 1]
      end
    end
  end
  if #orphans > 0 then
    table.sort(orphans)
    orphan = orphans[(tonumber(string.sub(ARGV[1], 1, 6), 16) or 0) % #orphans + 1]
    orphanValue = values[orphan]
  end
elseif not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('GET', KEYS[1]), fence}
end
fence = math.max(fence + 1, tonumber(ARGV[3]))
redis.call('SET', KEYS[2], string.format('%d', fence))
return {status, found, fence, orphan, orphanValue, pause, also}
