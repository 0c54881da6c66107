-- SPEC §2 / §7: a device connects (WebSocket or backend login). The first device makes the user `online`
-- (version +1); a further device changes `onlineDevices` only. Reconnecting with a connected deviceId replaces it.
-- SPEC §4: subscriptions are never dropped while the user is online.
-- KEYS: status, profile, devices, subs
-- ARGV: deviceId, device JSON {"p": platform, "n": node, "c": connection id, "k": "ws"|"api", "hb": ms}
-- Reply: {changed (1 status | 2 devices only), replaced device JSON | '', <status reply>} or error USER_NOT_FOUND.
if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('USER_NOT_FOUND')
end
local now = now_ms()
local device = cjson.decode(ARGV[2])
device.hb = now
local previous = redis.call('HGET', KEYS[3], ARGV[1]) or ''
redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(device))
redis.call('PERSIST', KEYS[4])
local changed = 2
if redis.call('HGET', KEYS[1], 't') ~= 'online' then
    redis.call('HSET', KEYS[1], 't', 'online')
    redis.call('HINCRBY', KEYS[1], 'v', 1)
    changed = 1
end
redis.call('HSET', KEYS[1], 'la', now)
return with_header({ changed, previous }, status_reply(KEYS[1], KEYS[2], KEYS[3]))
