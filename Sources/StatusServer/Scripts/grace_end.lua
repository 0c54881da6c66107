-- SPEC §10.3: ends an offline grace that ran out. A user whose last device dropped was kept `online` with no device
-- (devices_remove.lua wrote `gd`, the drop, and `gu`, the end); no device connected since (a connect deletes both),
-- so the user goes `offline` now with lastActiveAt = the drop, the custom status cleared with it (SPEC §2: one change,
-- version +1; SPEC §10.5 the public version moves when the public view did), and the subscriptions' retention clock
-- starts (SPEC §4).
-- SPEC §10.5: becoming invisible with a grace shows as a drop (set_custom_status.lua wrote `hu`, the end, and `ht`, what
-- the public still sees): an invisible user still seen online is seen `offline` now, lastActiveAt `hl` (the moment
-- they became invisible), a change of the public view only (the public version +1, the user's own version unmoved).
-- A user who left invisibility meanwhile has nothing to end.
-- SPEC §6: the change is published on the bus (docs/bus.md) by this script.
-- The housekeeping calls this for each entry of the app's grace index that fell due (GraceSweeper); the entry's time
-- is the node's estimate, the end is `gu` or `hu` on the Redis clock: an entry taken early is answered with the end.
-- KEYS: status, profile, devices, subs
-- ARGV: retention ms, appId, userId, user channel, app slot channel (docs/bus.md)
-- Reply: {0} when there is no grace to end (a device connected, the user left invisibility, or none was started),
-- {2, end} when one ends later, else {1, custom status cleared (0|1), public view changed (0|1), the end of a grace
-- still running ('' = none), <status reply>}.
local s = open_status(KEYS[1])
-- The grace markers: {gu, gd, hu}.
local g = redis.call('HMGET', KEYS[1], 'gu', 'gd', 'hu')
local now = now_ms()
local now_text = string.format('%d', now)
local before
local hidden_until = g[3]
if hidden_until and not (s[9] == 'invisible' and hidden_online(s[11])) then
    -- Left invisibility since.
    status_put(s, 'hu', nil)
    hidden_until = nil
end
if hidden_until and tonumber(hidden_until) <= now then
    before = public_of(s)
    status_put(s, 'ht', 'offline', HT)
    status_put(s, 'hu', nil)
    hidden_until = nil
end
local grace_until = g[1]
if grace_until and (s[1] ~= 'online' or redis.call('HLEN', KEYS[3]) > 0) then
    -- A marker a connect would have removed: not a grace.
    status_put(s, 'gd', nil)
    status_put(s, 'gu', nil)
    grace_until = nil
end
local cleared = 0
if grace_until and tonumber(grace_until) <= now then
    before = before or public_of(s)
    cleared = s[2] and 1 or 0
    status_put(s, 't', 'offline', T)
    status_put(s, 'la', g[2], LA)
    status_put(s, 'cs', nil, CS)
    status_put(s, 'ce', nil, CE)
    status_put(s, 'ai', nil, AI)
    status_put(s, 'gd', nil)
    status_put(s, 'gu', nil)
    status_bump(s, now_text)
    redis.call('PEXPIRE', KEYS[4], ARGV[1])
    grace_until = nil
end
local still = hidden_until
if grace_until and (not still or tonumber(grace_until) < tonumber(still)) then
    still = grace_until
end
if not before then
    status_flush(s)
    if still then
        return { 2, still }
    end
    return { 0 }
end
local public_change = status_settle(s, before, now_text)
local reply = status_reply(s, KEYS[2], KEYS[3])
status_flush(s)
publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply, public_change)
return with_header({ 1, cleared, public_change, still or '' }, reply)
