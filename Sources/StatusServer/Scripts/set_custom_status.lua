-- SPEC §4 setSelfStatus: sets or clears the caller's custom status; a call that changes nothing notifies nobody.
-- SPEC §2: `version` +1 on every change of customStatus; while online the request is activity.
-- SPEC §6: a change is published on the bus (docs/bus.md) by this script. The presence index is not touched:
-- statusType never changes here.
-- KEYS: status, profile, devices
-- ARGV: value ('' clears), appId, userId, user channel, app slot channel (docs/bus.md), keep ('1': the request left
-- customStatus out, so it stays as it is)
-- Reply: {changed (0|1), <status reply>} or error USER_NOT_FOUND.
--
-- The status hash is read once, with its read copy of the profile and the devices (lib.lua `write_read_copy`), and
-- written once: every setSelfStatus of a user goes through here, and each Redis call of a script costs about as much
-- as its arithmetic. The copy's `pc` proves the user exists (a user's keys are deleted together), so `EXISTS` runs
-- only for a hash without one.
local s = read_with_copy(KEYS[1])
if not s[5] then
    -- No read copy: the user does not exist, or the hash was last written by an earlier version, whose copy is
    -- written now (status_reply with refresh_copy) and read back.
    if redis.call('EXISTS', KEYS[2]) == 0 then
        return redis.error_reply('USER_NOT_FOUND')
    end
    status_reply(KEYS[1], KEYS[2], KEYS[3], true)
    s = read_with_copy(KEYS[1])
end
local now = now_ms()
local writes = {}
if s[1] == 'online' then
    s[3] = tostring(now)
    writes[#writes + 1] = 'la'
    writes[#writes + 1] = s[3]
end
local changed = 0
if ARGV[6] ~= '1' and (s[2] or '') ~= ARGV[1] then
    changed = 1
    -- bump_version, folded into the one write.
    s[4] = string.format('%d', (tonumber(s[4]) or 0) + 1)
    writes[#writes + 1] = 'v'
    writes[#writes + 1] = s[4]
    writes[#writes + 1] = 'vt'
    writes[#writes + 1] = now
    if ARGV[1] == '' then
        redis.call('HDEL', KEYS[1], 'cs')
    else
        writes[#writes + 1] = 'cs'
        writes[#writes + 1] = ARGV[1]
    end
    s[2] = ARGV[1]
end
if #writes > 0 then
    redis.call('HSET', KEYS[1], unpack(writes))
end
local reply = reply_from_copy(s)
if changed == 1 then
    publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply)
end
return with_header({ changed }, reply)
