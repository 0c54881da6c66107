-- SPEC §4 unsubscribeUserStatus, SPEC §5 rate limit: removes the listed targets, or every subscription when the
-- list is empty, after the rate-limit check, in one round trip.
-- KEYS: subs, rate-limit log, status
-- ARGV: calls, window ms, retention ms, targets...
-- Reply: {0, removed...} when accepted (every target listed, or all removed for an empty list), {1, retry ms} when limited.
local rejected = admit(KEYS[2], KEYS[3], ARGV[1], ARGV[2])
if rejected then
    return rejected
end
local reply = { 0 }
if #ARGV == 3 then
    for _, target in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do reply[#reply + 1] = target end
    redis.call('DEL', KEYS[1])
else
    for i = 4, #ARGV do
        redis.call('ZREM', KEYS[1], ARGV[i])
        reply[#reply + 1] = ARGV[i]
    end
    if redis.call('EXISTS', KEYS[1]) == 1 then
        refresh_retention(KEYS[1], KEYS[3], tonumber(ARGV[3]))
    end
end
return reply
