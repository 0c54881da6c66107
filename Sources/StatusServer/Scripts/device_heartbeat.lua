-- SPEC §7: a heartbeat keeps a backend-driven device alive for `heartbeatTimeoutSeconds`; while online it is activity.
-- KEYS: status, profile, devices
-- ARGV: deviceId
-- Reply: {found (0|1), <status reply>} or error USER_NOT_FOUND.
if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('USER_NOT_FOUND')
end
local now = now_ms()
local raw = redis.call('HGET', KEYS[3], ARGV[1])
local found = 0
if raw then
    local device = cjson.decode(raw)
    device.hb = now
    redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(device))
    touch_if_online(KEYS[1], now)
    found = 1
end
return with_header({ found }, status_reply(KEYS[1], KEYS[2], KEYS[3]))
