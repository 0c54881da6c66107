-- SPEC §4 setSelfStatus: sets or clears the caller's custom status; a call that changes nothing notifies nobody.
-- SPEC §2: `version` +1 on every change of customStatus; while online the request is activity.
-- SPEC §6: a change is published on the bus (docs/bus.md) by this script. The presence index is not touched:
-- statusType never changes here.
-- KEYS: status, profile, devices
-- ARGV: value ('' clears), appId, userId, user channel, app slot channel (docs/bus.md)
-- Reply: {changed (0|1), <status reply>} or error USER_NOT_FOUND.
--
-- The status hash is read once, with its read copy of the profile and the devices (lib.lua `write_read_copy`), and
-- written once: every setSelfStatus of a user goes through here, and each Redis call of a script costs about as much
-- as its arithmetic. The copy's `pc` proves the user exists (a user's keys are deleted together), so `EXISTS` runs
-- only for a hash without one.
local s = redis.call('HMGET', KEYS[1], 't', 'cs', 'la', 'v', 'pc', 'pr', 'pp', 'dp')
local now
if not s[5] then
    -- No read copy: the user does not exist, or the hash was last written by an earlier version.
    if redis.call('EXISTS', KEYS[2]) == 0 then
        return redis.error_reply('USER_NOT_FOUND')
    end
    now = now_ms()
    touch_if_online(KEYS[1], now)
    local changed = 0
    if (s[2] or '') ~= ARGV[1] then
        if ARGV[1] == '' then
            redis.call('HDEL', KEYS[1], 'cs')
        else
            redis.call('HSET', KEYS[1], 'cs', ARGV[1])
        end
        bump_version(KEYS[1], now)
        changed = 1
    end
    local reply = status_reply(KEYS[1], KEYS[2], KEYS[3])
    if changed == 1 then
        publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply)
    end
    return with_header({ changed }, reply)
end
now = now_ms()
local writes = {}
local last_active = s[3] or ''
if s[1] == 'online' then
    last_active = tostring(now)
    writes[#writes + 1] = 'la'
    writes[#writes + 1] = last_active
end
local version = s[4] or '0'
local changed = 0
if (s[2] or '') ~= ARGV[1] then
    changed = 1
    -- bump_version, folded into the one write.
    version = string.format('%d', (tonumber(version) or 0) + 1)
    writes[#writes + 1] = 'v'
    writes[#writes + 1] = version
    writes[#writes + 1] = 'vt'
    writes[#writes + 1] = now
    if ARGV[1] == '' then
        redis.call('HDEL', KEYS[1], 'cs')
    else
        writes[#writes + 1] = 'cs'
        writes[#writes + 1] = ARGV[1]
    end
end
if #writes > 0 then
    redis.call('HSET', KEYS[1], unpack(writes))
end
-- The status reply of lib.lua `status_reply`, from what was read and written.
local reply = { s[1] or 'unlogined', ARGV[1], last_active, version, s[6] or '', s[7] or '' }
for word in string.gmatch(s[8] or '', '%S+') do
    reply[#reply + 1] = word
end
if changed == 1 then
    publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply)
end
return with_header({ changed }, reply)
