-- SPEC §2: devices go away. When the last one goes the user leaves `online`: to `offline` (connection dropped,
-- heartbeat timed out, node died) or `unlogined` (logout, kick); the custom status is cleared in the same change
-- (version +1 once) and lastActiveAt is that moment; SPEC §10.5 the public version moves when the public view did.
-- Removing some devices only changes `onlineDevices`, unless the devices left are all idle (SPEC §10.1 automatic away:
-- the shown availability changed, version +1).
-- SPEC §10.3: with a grace (`offlineGraceSeconds` > 0) a last device leaving as `offline` leaves the user `online`
-- with no device until the grace ends (`gd` the drop, `gu` the end; grace_end.lua ends it, a connect cancels it):
-- `onlineDevices` only changes, and the caller wrote the app's grace index entry first. A kick of every device (or the
-- deletion of the user) during a grace ends it at once: the user is `unlogined`, lastActiveAt the drop (as at the end
-- of a grace), and watchers are told as for any kick. SPEC §10.5: so does a kick or logout of the last device end the
-- grace of becoming invisible (`ht` still `online:...`, set_custom_status.lua): others see the user `offline` now, at
-- the moment they became invisible (`hl`), as grace_end.lua would show them at its end.
-- SPEC §4: the retention clock of the subscriptions starts when the user leaves online.
-- SPEC §6: a change is published on the bus (docs/bus.md) by this script.
-- SPEC §7 resume: a WebSocket device that lost its socket leaves a resume point (ResumePoint.swift), written in the
-- same step as its departure, so that a device seen offline can always resume and the departure costs one round trip.
-- Its moment (from which a resume resends) is taken here, on the Redis clock that stamps every version change (`vt`,
-- `pt`): the node passes how long before now the session last showed a sign of life (less a margin), measured on its
-- own monotonic clock, so that a node whose wall clock runs ahead of Redis's never takes a change made after the loss
-- for one made before it.
-- SPEC §2 heartbeat timeout: a backend-driven device is removed for silence only when it has been silent for the
-- timeout on the Redis clock that stamps its heartbeats (`hb`). The sweeping node finds candidates on its own clock; a
-- node whose clock runs ahead may ask early, and then nothing is removed.
-- SPEC §4 (listing by presence), on a single server only: the app's online index is written in this same step with a
-- status change (the user leaving `online`, or automatic away), as device_connect.lua does for a connect, so that a
-- departure is one round trip. Its
-- keys are in another hash slot than the user's, which a cluster does not allow in one script: there the node writes
-- it in a step of its own (OnlineIndexWriter.swift, after this one).
-- KEYS: status, profile, devices, subs[, the device's resume point key][, online index, applied versions, recent
--       changes, listed roles (a single server)]
-- ARGV: mode ('offline'|'unlogined'), retention ms, connection id ('' = any), silent-for ms ('' = no check),
--       appId, userId, user channel, app slot channel (docs/bus.md), resume point without its moment
--       (`<connection> <the rest>`, ResumePoint.Pending; '' = none), its TTL in ms, grace ms ('0' = none), how many ms
--       before now the point's moment is[, recent changes keep ms, role indexes' prefix (with the single-server
--       keys)], deviceIds... (none = every device)
-- SPEC §8: whether a custom status was cleared with it is part of the reply (a `customStatusChange` callback).
-- Reply: {changed (0 none | 1 status | 2 devices only), custom status cleared (0|1), removed count, removed id 1,
--         removed JSON 1, ..., <status reply>}
local now = now_ms()
if ARGV[9] ~= '' then
    local connection, rest = string.match(ARGV[9], '^(%S+)(.*)$')
    redis.call('SET', KEYS[5], connection .. ' ' .. string.format('%d', now - tonumber(ARGV[12])) .. rest, 'PX', ARGV[10])
end
-- The online index's keys are the last four, after the resume point's when there is one.
local index
local first_id = 13
if #KEYS >= 8 then
    index = { KEYS[#KEYS - 3], KEYS[#KEYS - 2], KEYS[#KEYS - 1], KEYS[#KEYS] }
    first_id = 15
end
local ids = {}
if #ARGV >= first_id then
    for i = first_id, #ARGV do ids[#ids + 1] = ARGV[i] end
else
    ids = redis.call('HKEYS', KEYS[3])
end
local removed = {}
for _, id in ipairs(ids) do
    local raw = redis.call('HGET', KEYS[3], id)
    if raw then
        -- The record's connection id and heartbeat, found in its JSON without decoding it: `"c"` is a string of a
        -- connection id (no quote nor backslash in it) and `"hb"` an integer, each written once by device_connect.lua
        -- or the node.
        local matches = ARGV[3] == '' or string.match(raw, '"c":"([^"]*)"') == ARGV[3]
        local stale = ARGV[4] == '' or (tonumber(string.match(raw, '"hb":(%d+)')) or 0) < now - tonumber(ARGV[4])
        if matches and stale then
            redis.call('HDEL', KEYS[3], id)
            removed[#removed + 1] = id
            removed[#removed + 1] = raw
        end
    end
end
local changed = 0
local cleared = 0
local public_change = 0
local devices -- read once the devices are final (status_auto_away), and reused by status_reply
local now_text = string.format('%d', now)
local s = open_status(KEYS[1])
-- The user leaves `online` as ARGV[1], last active at `last_active`: one change with the clearing of the custom status.
local function leave_online(before, last_active)
    cleared = before[2] and 1 or 0
    status_put(s, 'cs', nil, CS)
    status_put(s, 'ce', nil, CE)
    status_put(s, 'ai', nil, AI)
    status_put(s, 'gd', nil)
    status_put(s, 'gu', nil)
    if ARGV[1] == 'unlogined' and before[5] == 'invisible' and hidden_online(before[7]) then
        status_put(s, 'ht', 'offline', HT)
        status_put(s, 'hu', nil)
    end
    status_put(s, 't', ARGV[1], T)
    status_put(s, 'la', last_active, LA)
    status_bump(s, now_text)
    -- SPEC §10.5: an invisible user really leaving changes nothing the public sees (past the grace of becoming
    -- invisible).
    public_change = status_settle(s, before, now_text)
    redis.call('PEXPIRE', KEYS[4], ARGV[2])
    changed = 1
end
if #removed > 0 then
    changed = 2
    local before = public_of(s)
    local left = redis.call('HLEN', KEYS[3])
    if left == 0 and before[1] == 'online' and ARGV[1] == 'offline' and tonumber(ARGV[11]) > 0 then
        status_put(s, 'gd', now_text)
        status_put(s, 'gu', string.format('%d', now + tonumber(ARGV[11])))
    elseif left == 0 and before[1] == 'online' then
        leave_online(before, now_text)
    elseif left > 0 and before[1] == 'online' then
        devices = read_devices(KEYS[3])
        status_auto_away(s, devices)
        if shown_availability(before) ~= shown_availability(public_of(s)) then
            status_bump(s, now_text)
            public_change = status_settle(s, before, now_text)
            changed = 1
        end
    end
elseif ARGV[1] == 'unlogined' and #ARGV < first_id then
    -- Every device kicked while none is connected: an offline grace, if one runs, ends now.
    local dropped = redis.call('HGET', KEYS[1], 'gd')
    if dropped and s[1] == 'online' and redis.call('HLEN', KEYS[3]) == 0 then
        leave_online(public_of(s), dropped)
    end
end
local header = { changed, cleared, #removed / 2 }
for _, value in ipairs(removed) do header[#header + 1] = value end
local reply = status_reply(s, KEYS[2], KEYS[3], #removed > 0, devices)
status_flush(s)
if changed ~= 0 then
    publish_status(ARGV[7], ARGV[8], ARGV[5], ARGV[6], changed, reply, public_change)
end
if index and changed == 1 then
    index_presence(index, ARGV[14], ARGV[6], reply[4], reply[1] == 'online', reply[5], now_text)
    trim_recent(index[3], now, ARGV[13])
end
return with_header(header, reply)
