-- SPEC §4 setSelfStatus: sets or clears the caller's custom status; a call that changes nothing notifies nobody.
-- SPEC §2: `version` +1 on every change of customStatus; while online the request is activity.
-- SPEC §6: a change is published on the bus (docs/bus.md) by this script. The presence index is not touched:
-- statusType never changes here.
-- KEYS: status, profile, devices
-- ARGV: value ('' clears), appId, userId, user channel, app slot channel (docs/bus.md)
-- Reply: {changed (0|1), <status reply>} or error USER_NOT_FOUND.
if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('USER_NOT_FOUND')
end
local now = now_ms()
touch_if_online(KEYS[1], now)
local current = redis.call('HGET', KEYS[1], 'cs') or ''
local changed = 0
if current ~= ARGV[1] then
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
