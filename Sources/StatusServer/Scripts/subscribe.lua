-- SPEC §4 subscribeUserStatus: the add and the cap, for a call the rate limit accepted already (query_rate_limit.lua,
-- so that a refused call never reaches its targets, SPEC §10.7). Subscriptions are ordered by subscription time
-- (within a call, list order); subscribing again moves a target to newest; past `subscriptionLimit` the earliest are
-- removed in the same atomic step.
-- KEYS: subs, status
-- ARGV: subscription limit, retention ms, targets...
-- Reply: {evicted...}.
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local score = 0
if #top > 0 then score = tonumber(top[2]) end
for i = 3, #ARGV do
    score = score + 1
    redis.call('ZADD', KEYS[1], score, ARGV[i])
end
local limit = tonumber(ARGV[1])
local count = redis.call('ZCARD', KEYS[1])
local reply = {}
if count > limit then
    local evicted = redis.call('ZRANGE', KEYS[1], 0, count - limit - 1)
    redis.call('ZREMRANGEBYRANK', KEYS[1], 0, count - limit - 1)
    for _, target in ipairs(evicted) do reply[#reply + 1] = target end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
    refresh_retention(KEYS[1], KEYS[2], tonumber(ARGV[2]))
end
return reply
