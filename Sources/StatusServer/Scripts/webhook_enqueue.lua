-- SPEC §8 (a queue that survives a restart) and §10.7 (each app's undelivered events are bounded, the oldest dropped
-- first): appends one event to the app's own queue, due at once. Past the app's bound the oldest events go, with
-- their due times and attempt counts; their number is returned for statusd_webhook_deliveries_total{outcome="dropped"}.
-- The queue is in the app's slot, so deleting the app deletes it.
-- KEYS: the app's webhook stream, its due set, its attempt counts
-- ARGV: event body (JSON), the app's generation (its created-at ms), the most undelivered events the app may have
-- Reply: {events dropped to keep the bound, 1 when the queue was empty before (the app must join the index), else 0}
local stream, due, attempts = KEYS[1], KEYS[2], KEYS[3]
local was_empty = redis.call('ZCARD', due) == 0
local id = redis.call('XADD', stream, '*', 'body', ARGV[1], 'gen', ARGV[2])
redis.call('ZADD', due, now_ms(), id)
local over = redis.call('XLEN', stream) - tonumber(ARGV[3])
local dropped = 0
if over > 0 then
    for _, entry in ipairs(redis.call('XRANGE', stream, '-', '+', 'COUNT', over)) do
        redis.call('XDEL', stream, entry[1])
        redis.call('ZREM', due, entry[1])
        redis.call('HDEL', attempts, entry[1])
        dropped = dropped + 1
    end
end
return { dropped, was_empty and 1 or 0 }
