-- SPEC §4 listing users by presence: the app's index of online users, applied in version order so that a late
-- update from another node never undoes a newer one.
-- KEYS: online index (sorted set), applied versions (hash)
-- ARGV: userId, version, online ('1'|'0')
-- Reply: 1 when applied, 0 when older than what the index holds.
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
