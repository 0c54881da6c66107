-- SPEC §10.2: a custom status set with `clearAfterSeconds` is cleared at `customStatusExpiresAt` as a notified change
-- (SPEC §2 `version` +1; SPEC §10.5 the public version moves when the public view did; SPEC §6 published here). The
-- housekeeping calls this for each entry of the app's due-time index that fell due (ExpirySweeper); the entry's time
-- is the `ce` it was written with, so a custom status changed or cleared since (another `ce`, or none) is left alone.
-- The moment is read on the Redis clock, shared by every node: a node whose own clock runs ahead takes the entry early
-- and is answered with `ce`, so a custom status is never cleared before its `customStatusExpiresAt`.
-- KEYS: status, profile, devices
-- ARGV: the due `ce` (epoch ms), appId, userId, user channel, app slot channel (docs/bus.md)
-- Reply: {0} when there was nothing to clear, {2, ce} when its moment has not come yet, else {1, public view changed
-- (0|1), <status reply>}.
local s = read_with_copy(KEYS[1])
if not s[5] or not s[2] or not s[13] or tonumber(s[13]) ~= tonumber(ARGV[1]) then
    return { 0 }
end
local now = now_ms()
if tonumber(s[13]) > now then
    return { 2, s[13] }
end
local before = public_of(s)
redis.call('HDEL', KEYS[1], 'cs', 'ce')
bump_version(KEYS[1], now)
local public_change = settle_public(KEYS[1], before, now)
local reply = status_reply(KEYS[1], KEYS[2], KEYS[3])
publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply, public_change)
return with_header({ 1, public_change }, reply)
