-- SPEC §10.4: a connected device reports its state (`active`, `idle`, `background`; stored as the device's `s`, absent
-- while active), and SPEC §7: a backend-driven device heartbeats (alive for `heartbeatTimeoutSeconds`), with or without
-- a state. While online either is activity (SPEC §2).
-- SPEC §10.1 automatic away: when the shown availability changes (every device idle, or one active again) it is a
-- change (version +1; SPEC §10.5 the public version moves when the public view did); any other change of state changes
-- `onlineDevices` only. SPEC §6: a change is published on the bus (docs/bus.md) by this script.
-- KEYS: status, profile, devices
-- ARGV: deviceId, state ('' = unchanged), heartbeat ('1': set the device's last heartbeat), appId, userId,
--       user channel, app slot channel (docs/bus.md)
-- Reply: {found (0|1), changed (0 none | 1 status | 2 devices only), <status reply>} or error USER_NOT_FOUND.
if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('USER_NOT_FOUND')
end
local now = now_ms()
local raw = redis.call('HGET', KEYS[3], ARGV[1])
if not raw then
    local s = open_status(KEYS[1])
    local reply = status_reply(s, KEYS[2], KEYS[3])
    status_flush(s)
    return with_header({ 0, 0 }, reply)
end
local device = cjson.decode(raw)
local state = device.s or 'active'
local moved = ARGV[2] ~= '' and ARGV[2] ~= state
if moved then
    device.s = ARGV[2] ~= 'active' and ARGV[2] or nil
end
if ARGV[3] == '1' then
    device.hb = now
end
if moved or ARGV[3] == '1' then
    redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(device))
end
local now_text = string.format('%d', now)
local s = open_status(KEYS[1])
local before = public_of(s)
if before[1] == 'online' then
    -- SPEC §2: activity while online.
    status_put(s, 'la', now_text, LA)
end
if not moved then
    local reply = status_reply(s, KEYS[2], KEYS[3])
    status_flush(s)
    return with_header({ 1, 0 }, reply)
end
local changed = 2
local public_change = 0
local devices = read_devices(KEYS[3])
status_auto_away(s, devices)
if before[1] == 'online' and shown_availability(before) ~= shown_availability(public_of(s)) then
    status_bump(s, now_text)
    public_change = status_settle(s, before, now_text)
    changed = 1
end
local reply = status_reply(s, KEYS[2], KEYS[3], true, devices)
status_flush(s)
publish_status(ARGV[6], ARGV[7], ARGV[4], ARGV[5], changed, reply, public_change)
return with_header({ 1, changed }, reply)
