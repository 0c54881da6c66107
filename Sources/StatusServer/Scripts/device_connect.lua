-- SPEC §2 / §7: a device connects (WebSocket or backend login). The first device makes the user `online`
-- (version +1); a further device changes `onlineDevices` only. Reconnecting with a connected deviceId replaces it.
-- SPEC §4: subscriptions are never dropped while the user is online.
-- SPEC §3 `maxDevicesPerUser`: a login past it removes (kicks) the user's earliest-connected other devices, in the same
-- step, so the user never has more devices than the limit and subscribers see one change at most.
-- SPEC §6: the change is published on the bus (docs/bus.md) by this script.
-- KEYS: status, profile, devices, subs
-- ARGV: deviceId, device JSON {"p": platform, "n": node, "c": connection id, "k": "ws"|"api"}, max devices per user,
--       appId, userId, bus channel
-- Reply: {changed (1 status | 2 devices only), replaced device JSON | '', kicked count k, k x (deviceId, device JSON),
--         <status reply>} or error USER_NOT_FOUND.
if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('USER_NOT_FOUND')
end
local now = now_ms()
local device = cjson.decode(ARGV[2])
device.hb = now
device.ct = now
local previous = redis.call('HGET', KEYS[3], ARGV[1]) or ''
redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(device))
redis.call('PERSIST', KEYS[4])
local kicked = {}
local max_devices = tonumber(ARGV[3])
local count = redis.call('HLEN', KEYS[3])
if count > max_devices then
    local all = redis.call('HGETALL', KEYS[3])
    local others = {}
    for i = 1, #all, 2 do
        if all[i] ~= ARGV[1] then
            local d = cjson.decode(all[i + 1])
            others[#others + 1] = { id = all[i], raw = all[i + 1], ct = tonumber(d.ct or 0) }
        end
    end
    table.sort(others, function(a, b)
        if a.ct == b.ct then
            return a.id < b.id
        end
        return a.ct < b.ct
    end)
    for i = 1, count - max_devices do
        redis.call('HDEL', KEYS[3], others[i].id)
        kicked[#kicked + 1] = others[i].id
        kicked[#kicked + 1] = others[i].raw
    end
end
local changed = 2
if redis.call('HGET', KEYS[1], 't') ~= 'online' then
    redis.call('HSET', KEYS[1], 't', 'online')
    redis.call('HINCRBY', KEYS[1], 'v', 1)
    changed = 1
end
redis.call('HSET', KEYS[1], 'la', now)
local header = { changed, previous, #kicked / 2 }
for i = 1, #kicked do
    header[#header + 1] = kicked[i]
end
local reply = status_reply(KEYS[1], KEYS[2], KEYS[3])
publish_status(ARGV[6], ARGV[4], ARGV[5], changed, reply)
return with_header(header, reply)
