-- SPEC §10.3: ends an offline grace that ran out. A user whose last device dropped was kept `online` with no device
-- (devices_remove.lua wrote `gd`, the drop, and `gu`, the end); no device connected since (a connect deletes both),
-- so the user goes `offline` now with lastActiveAt = the drop, the custom status cleared with it (SPEC §2: one change,
-- version +1; SPEC §10.5 the public version moves when the public view did), and the subscriptions' retention clock
-- starts (SPEC §4). SPEC §6: the change is published on the bus (docs/bus.md) by this script.
-- The housekeeping calls this for each entry of the app's grace index that fell due (GraceSweeper); the entry's time
-- is the node's estimate, the end is `gu` on the Redis clock: an entry taken early is answered with `gu`.
-- KEYS: status, profile, devices, subs
-- ARGV: retention ms, appId, userId, user channel, app slot channel (docs/bus.md)
-- Reply: {0} when there is no grace to end (a device connected, or none was started), {2, gu} when it ends later,
-- else {1, custom status cleared (0|1), public view changed (0|1), <status reply>}.
local g = redis.call('HMGET', KEYS[1], 'gu', 'gd', 't')
if not g[1] then
    return { 0 }
end
if g[3] ~= 'online' or redis.call('HLEN', KEYS[3]) > 0 then
    -- A marker a connect would have removed: not a grace.
    redis.call('HDEL', KEYS[1], 'gd', 'gu')
    return { 0 }
end
local now = now_ms()
if tonumber(g[1]) > now then
    return { 2, g[1] }
end
local before = read_public(KEYS[1])
redis.call('HSET', KEYS[1], 't', 'offline', 'la', g[2])
local cleared = redis.call('HDEL', KEYS[1], 'cs')
redis.call('HDEL', KEYS[1], 'ce', 'ai', 'gd', 'gu')
bump_version(KEYS[1], now)
local public_change = settle_public(KEYS[1], before, now)
redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[1]))
local reply = status_reply(KEYS[1], KEYS[2], KEYS[3])
publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply, public_change)
return with_header({ 1, cleared, public_change }, reply)
