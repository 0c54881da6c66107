-- SPEC §10.2: a custom status set with `clearAfterSeconds` is cleared at `customStatusExpiresAt` as a notified change
-- (SPEC §2 `version` +1; SPEC §10.5 the public version moves when the public view did; SPEC §6 published here). The
-- housekeeping calls this for each entry of the app's due-time index that fell due (ExpirySweeper). The index is in the
-- app's slot, the status in the user's, so the entry's time may be off from the stored `ce` (writes racing each other,
-- a lease that ran out): the stored `ce` alone decides. None stored: nothing to clear (the entry goes). Its moment not
-- come on the Redis clock (shared by every node): answered with `ce`, where the entry goes back (a custom status is
-- never cleared before its `customStatusExpiresAt`). Else cleared.
-- SPEC §10.5 with a grace: an invisible user still seen `online` (`ht`, hidden_online) is seen with the custom status
-- they had when they became invisible. When that is the one expiring now, it goes from what others see too, at this
-- moment, as it would for a user whose last device dropped: a public change like any expiry.
-- KEYS: status, profile, devices
-- ARGV: appId, userId, user channel, app slot channel (docs/bus.md)
-- Reply: {0} when there was nothing to clear, {2, ce} when its moment has not come yet, else {1, public view changed
-- (0|1), <status reply>}.
local s = open_status(KEYS[1])
if not s[5] or not s[2] or not s[13] then
    return { 0 }
end
local now = now_ms()
if tonumber(s[13]) > now then
    return { 2, s[13] }
end
local before = public_of(s)
local now_text = string.format('%d', now)
if s[9] == 'invisible' then
    local seen = hidden_online(s[11])
    if seen and seen.expires == s[13] and seen.custom == s[2] then
        status_put(s, 'ht', 'online:' .. seen.av .. '::', HT)
    end
end
status_put(s, 'cs', nil, CS)
status_put(s, 'ce', nil, CE)
status_bump(s, now_text)
local public_change = status_settle(s, before, now_text)
local reply = status_reply(s, KEYS[2], KEYS[3])
status_flush(s)
publish_status(ARGV[3], ARGV[4], ARGV[1], ARGV[2], 1, reply, public_change)
return with_header({ 1, public_change }, reply)
