-- SPEC §4 listing users by presence: the app's index of online users, applied in version order so that a late
-- update from another node never undoes a newer one.
-- SPEC §7 resume: the user also goes into the app's log of recent changes (score = now), trimmed to `keep` ms, so that
-- a resuming device with presence `all` or `roles:` finds who changed while it was away.
-- KEYS: online index (sorted set), applied versions (hash), recent changes (sorted set)
-- ARGV: userId, version, online ('1'|'0'), keep ms
-- Reply: 1 when applied, 0 when older than what the index holds.
local now = now_ms()
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - tonumber(ARGV[4])))
redis.call('PEXPIRE', KEYS[3], ARGV[4])
local applied = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '-1')
local version = tonumber(ARGV[2])
if version < applied then
    return 0
end
redis.call('HSET', KEYS[2], ARGV[1], version)
if ARGV[3] == '1' then
    redis.call('ZADD', KEYS[1], 0, ARGV[1])
else
    redis.call('ZREM', KEYS[1], ARGV[1])
end
return 1
