-- SPEC §10.6 `connectRateLimit` and §10.7: a connect the limit refuses costs Redis no more than the check that refuses
-- it. A WebSocket connect asks this first, before it stores anything (its session, its app's mark): past `calls`
-- accepted connects in the last `window ms` it is refused here, and nothing of the user is read.
-- Reads only: the connect itself (device_connect.lua) counts it, and checks again in its own step, so two connects
-- racing past this check are still held to the limit.
-- SPEC §6: an admitted connect of a user with no session on the node yet reads, in this same step, whom the user
-- watches and who is kept from them (subscriptions, friends, blocks either way; as RelationsLoader reads them), so
-- that the connect's admission and its relationships are one round trip.
-- KEYS: connect rate-limit log, subscriptions, friends, blocks, blocked-by
-- ARGV: calls, window ms, '1' to read the relationships ('0': the node knows them)
-- Reply: 0 when admitted without the relationships; {subscriptions, friends, blocked (both ways)} when admitted with
--        them; else the error CONNECT_RATE_LIMITED <retry after ms>.
local retry = rate_refusal(KEYS[1], now_ms(), tonumber(ARGV[1]), tonumber(ARGV[2]))
if retry > 0 then
    return redis.error_reply('CONNECT_RATE_LIMITED ' .. retry)
end
if ARGV[3] ~= '1' then
    return 0
end
return {
    redis.call('ZRANGE', KEYS[2], 0, -1),
    redis.call('SMEMBERS', KEYS[3]),
    redis.call('SUNION', KEYS[4], KEYS[5]),
}
