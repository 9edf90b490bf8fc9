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
--
-- Every replica runs this for every slot on every node, so it reads what
-- it needs in as few commands as it can (the commands, not the keys, are
-- Redis's cost): the counter, tombstone, done marker and pause register
-- in one MGET (a refusal by a done marker costs nothing more), the
-- family's claims in one HGETALL (the slot's own claim and the others,
-- for the orphan scan) and their leases in one HMGET. The replies and
-- what is written are as they were, key for key.
-- servertime() is the node's clock (TIME), defined ahead of the script
-- (rediswire.go): read once per call, and once per fold in a batch.
local field = ARGV[4]
local got
if field ~= '' then
  got = redis.call('MGET', KEYS[2], KEYS[#KEYS], KEYS[1], KEYS[5])
else
  got = redis.call('MGET', KEYS[2], KEYS[#KEYS], KEYS[1])
end
local fence = tonumber(got[1] or '0') or 0
if got[2] then
  -- Undone before it ran here (a request that queued on a frozen node):
  -- it changes nothing.
  return {0, '', fence, '', '', ''}
end
local status, found, orphan, orphanValue, pause, also = 1, '', '', '', '', 0
if field ~= '' then
  pause = got[4] or ''
  if got[3] then
    return {0, got[3], fence, '', '', pause}
  end
  local t = servertime()
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  -- The family's claims: this slot's own, and the others, whose leases
  -- are read with this slot's in one HMGET.
  local claims = redis.call('HGETALL', KEYS[3])
  local claim, others, values = false, {}, {}
  for i = 1, #claims, 2 do
    if claims[i] == field then
      claim = claims[i + 1]
    else
      others[#others + 1] = claims[i]
      values[claims[i]] = claims[i + 1]
    end
  end
  -- (In batches: unpack's stack is bounded; one batch in practice.)
  local lives = redis.call('HMGET', KEYS[4], field, unpack(others, 1, math.min(#others, 256)))
  for b = 257, #others, 256 do
    local more = redis.call('HMGET', KEYS[4], unpack(others, b, math.min(#others, b + 255)))
    for _, l in ipairs(more) do
      lives[#lives + 1] = l
    end
  end
  local live = lives[1]
  if live then
    local v, exp = string.match(live, '^(.*)|(%d+)$')
    if tonumber(exp) > now then
      return {0, v, fence, '', '', pause, 0, claim or ''}
    end
  end
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
  local orphans = {}
  for i, o in ipairs(others) do
    local l = lives[i + 1]
    if not l or tonumber(string.match(l, '|(%d+)$')) <= now then
      orphans[#orphans + 1] = o
    end
  end
  if #orphans > 0 then
    table.sort(orphans)
    orphan = orphans[(tonumber(string.sub(ARGV[1], 1, 6), 16) or 0) % #orphans + 1]
    orphanValue = values[orphan]
  end
elseif got[3] then
  return {0, got[3], fence}
elseif not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  -- Not a string (MGET reads it as absent): held by nothing we set.
  return {0, '', fence}
end
fence = math.max(fence + 1, tonumber(ARGV[3]))
redis.call('SET', KEYS[2], string.format('%d', fence))
return {status, found, fence, orphan, orphanValue, pause, also}
