-- SPEC §10.6 `connectRateLimit` and §10.7: a connect the limit refuses costs Redis no more than the check that refuses
-- it. A WebSocket connect asks this first, before it subscribes to anything or stores anything (its session, its
-- node's device list, its app's mark): past `calls` accepted connects in the last `window ms` it is refused here.
-- Reads only: the connect itself (device_connect.lua) counts it, and checks again in its own step, so two connects
-- racing past this check are still held to the limit.
-- KEYS: connect rate-limit log
-- ARGV: calls, window ms
-- Reply: 0 when a connect would be admitted now, else the error CONNECT_RATE_LIMITED <retry after ms>.
local now = now_ms()
local window = tonumber(ARGV[2])
local since = '(' .. (now - window)
if redis.call('ZCOUNT', KEYS[1], since, '+inf') < tonumber(ARGV[1]) then
    return 0
end
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local retry = tonumber(oldest[2]) + window - now
if retry < 1 then
    retry = 1
end
return redis.error_reply('CONNECT_RATE_LIMITED ' .. retry)
