-- Read a family's log (Node OpLog): its newest entries from a score on.
-- KEYS[1] the log (a sorted set); ARGV[1] lowest score, ARGV[2] most
-- entries.
-- Returns {entry, score, entry, score, ...}, newest first.
return redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
