-- SPEC §8 "retried with backoff on timeout (2 s) or non-2xx": after a failed attempt the event is due again after the
-- backoff, with its attempt count. An event no longer queued (dropped past the bound, or its app deleted) stays gone:
-- nothing is created.
-- KEYS: the app's due set, its attempt counts
-- ARGV: event id, backoff ms, attempts made
-- Reply: 1 rescheduled, 0 the event is gone
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
    return 0
end
redis.call('ZADD', KEYS[1], now_ms() + tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
