-- Compare-and-release (Node OpRelease): where the lease holds our value,
-- delete it or, when a done TTL is given, leave the done marker instead,
-- in the same step.
-- KEYS[1] lock key (a claim's done-marker key), KEYS[2] and KEYS[3] the
-- family's claims and lives hashes (claims only), KEYS[4] the family's log
-- (claims only: a sorted set); ARGV[1] value, ARGV[2]
-- done marker, ARGV[3] done ttl in milliseconds ("0": no marker), ARGV[4]
-- field ("": a plain lease), ARGV[5] a log entry added with the done
-- marker ("" none), ARGV[6] its score, ARGV[7] how many entries the log
-- keeps (the newest by score); KEYS[5] and ARGV[8] (claims only, when
-- ARGV[8] is set): a plain lease of the same family (a job lease) and its
-- value, deleted where it holds that value, in the same step; KEYS[6] and
-- ARGV[9] (claims only, when ARGV[9] is not "0"): a record of the family
-- raised to ARGV[9] unless it holds more (as OpMaxSet), in the same step;
-- ARGV[10] > 0: first set the last key (an undo's tombstone of this value,
-- which the acquire script honours) for ARGV[10] milliseconds.
-- ARGV[11] "1": the lease took another's claim over (a settler's end):
-- its entry is added only where the lease is ours.
-- Returns (plus 2 when the KEYS[5] lease was ours and is deleted) 1 when
-- the lease was ours here, or the key already holds this very done marker
-- or, for a settler's end, the log this very entry (a retry whose first
-- answer was lost: its entry is added only where the lease was ours, so
-- it tells that the first attempt found it ours even after the marker
-- expired), 0 otherwise. A done marker is
-- also set where the lease or claim is absent (expired, or the node
-- restarted empty), so it blocks the slot on as many nodes as possible,
-- and over an abandoned claim whose lease we took over; it never replaces
-- a done marker or another holder's value.
--
-- Every slot's run ends here on every node, so it reads in as few
-- commands as it can: the job lease, the record and the done marker in
-- one MGET where the end has a job lease or record to settle, and the
-- done marker not at all otherwise while the claim or its lease is ours
-- (a retry's marker would have removed both); the clock only where it
-- decides the reply. What it writes and returns is as it was.
-- servertime() is the node's clock (TIME), defined ahead of the script
-- (rediswire.go): read once per call, and once per fold in a batch.
local doneTTL = tonumber(ARGV[3])
local field = ARGV[4]
local taken = ARGV[11] == '1'
if ARGV[10] and tonumber(ARGV[10]) > 0 then
  redis.call('SET', KEYS[#KEYS], '1', 'PX', ARGV[10])
end
local withAlso = field ~= '' and ARGV[8] and ARGV[8] ~= ''
local withRecord = field ~= '' and ARGV[9] and ARGV[9] ~= '0'
-- cur: the lock key's value where it was read (false: absent), nil
-- where not read yet.
local cur
local also = 0
if withAlso or withRecord then
  local got = redis.call('MGET', KEYS[1], KEYS[5], KEYS[6])
  cur = got[1]
  if withAlso and got[2] == ARGV[8] then
    redis.call('DEL', KEYS[5])
    also = 2
  end
  if withRecord and tonumber(ARGV[9]) > (tonumber(got[3] or '0') or 0) then
    redis.call('SET', KEYS[6], ARGV[9])
  end
end
if field == '' then
  if cur == nil then
    cur = redis.call('GET', KEYS[1])
  end
  if doneTTL > 0 and cur == ARGV[2] then
    return 1
  end
  if cur == ARGV[1] then
    if doneTTL > 0 then
      redis.call('SET', KEYS[1], ARGV[2], 'PX', doneTTL)
    else
      redis.call('DEL', KEYS[1])
    end
    return 1
  end
  if not cur and doneTTL > 0 then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', doneTTL)
  end
  return 0
end
local claim = redis.call('HGET', KEYS[2], field)
local live = redis.call('HGET', KEYS[3], field)
-- Ours as written, or as its owner confirmed it started.
local claimOurs = claim == ARGV[1] or claim == 'started:' .. ARGV[1]
local v, exp
if live then
  v, exp = string.match(live, '^(.*)|(%d+)$')
end
local liveMine = v == ARGV[1]
if doneTTL > 0 and not claimOurs and not liveMine then
  -- A retry whose first answer was lost: its done marker is here, and
  -- neither the claim nor its lease is ours any more (that end removed
  -- both, and no acquisition writes them past a done marker).
  if cur == nil then
    cur = redis.call('GET', KEYS[1])
  end
  if cur == ARGV[2] then
    return 1 + also
  end
  -- Or, a settler's retry long after (its replica paused past the done
  -- TTL), its marker expired since: its log entry, which a settler's end
  -- adds only where it found the lease ours, stays.
  if taken and ARGV[5] ~= '' and redis.call('ZSCORE', KEYS[4], ARGV[5]) then
    return 1 + also
  end
end
local liveOurs = false
if liveMine then
  redis.call('HDEL', KEYS[3], field)
  if not claimOurs then
    -- Only here does the lease's expiry decide anything.
    local t = servertime()
    liveOurs = tonumber(exp) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
end
if doneTTL > 0 then
  if claimOurs or not claim or liveOurs then
    if claim then
      redis.call('HDEL', KEYS[2], field)
    end
    redis.call('SET', KEYS[1], ARGV[2], 'PX', doneTTL, 'NX')
    if (claimOurs or liveOurs or not taken) and ARGV[5] and ARGV[5] ~= '' then
      redis.call('ZADD', KEYS[4], ARGV[6], ARGV[5])
      redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[7]) - 1)
    end
  end
elseif claimOurs then
  redis.call('HDEL', KEYS[2], field)
end
if claimOurs or liveOurs then
  return 1 + also
end
return also
