-- SPEC §4 subscribeUserStatus, SPEC §5 rate limit: one round trip for the rate-limit check, the add and the cap.
-- Subscriptions are ordered by subscription time (within a call, list order); subscribing again moves a target to
-- newest; past `subscriptionLimit` the earliest are removed in the same atomic step.
-- KEYS: subs, rate-limit log, status
-- ARGV: calls, window ms, subscription limit, retention ms, targets...
-- Reply: {0, evicted...} when accepted, {1, retry after ms} when rate limited.
local rejected = admit(KEYS[2], KEYS[3], ARGV[1], ARGV[2])
if rejected then
    return rejected
end
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local score = 0
if #top > 0 then score = tonumber(top[2]) end
for i = 5, #ARGV do
    score = score + 1
    redis.call('ZADD', KEYS[1], score, ARGV[i])
end
local limit = tonumber(ARGV[3])
local count = redis.call('ZCARD', KEYS[1])
local reply = { 0 }
if count > limit then
    local evicted = redis.call('ZRANGE', KEYS[1], 0, count - limit - 1)
    redis.call('ZREMRANGEBYRANK', KEYS[1], 0, count - limit - 1)
    for _, target in ipairs(evicted) do reply[#reply + 1] = target end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
    refresh_retention(KEYS[1], KEYS[3], tonumber(ARGV[4]))
end
return reply
