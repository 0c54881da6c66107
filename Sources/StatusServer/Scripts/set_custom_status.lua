-- SPEC §4 setSelfStatus: sets or clears the caller's custom status and/or sets their availability (SPEC §10.1); a field
-- left out keeps its value, and a call that changes nothing notifies nobody.
-- SPEC §2: `version` +1 on every change of customStatus or availability; while online the request is activity.
-- SPEC §10.5: becoming invisible freezes what the public sees (`ht`, `hl`: offline since now when online, else the
-- status they had); leaving invisibility drops it (while not online, the frozen lastActiveAt stays: the moment others
-- saw the user leave); `pv` moves by 1 when the public view changed (lib.lua settle_public).
-- SPEC §10.5 with `offlineGraceSeconds` G > 0: becoming invisible while seen online shows as the last device dropping.
-- The public keeps seeing the user as they were (`ht` holds it, lib.lua hidden_online) until `hu`, G after that moment
-- (or the end of the offline grace already running, whose drop is then the moment), when grace_end.lua shows them
-- offline; the caller wrote the app's grace index entry first. Leaving invisibility before then changes nothing seen.
-- SPEC §6: a change is published on the bus (docs/bus.md) by this script. The presence index is not touched:
-- statusType never changes here.
-- KEYS: status, profile, devices
-- ARGV: value ('' clears), appId, userId, user channel, app slot channel (docs/bus.md), keep ('1': the request left
-- customStatus out, so it stays as it is), availability ('' = left out, kept), customStatusExpiresAt ('' = none: a
-- custom status set without `clearAfterSeconds`, SPEC §10.2, has none; the caller wrote the due-time index entry first),
-- grace ms ('0' = none: becoming invisible shows at once; else the caller wrote the grace index entry first)
-- Reply: {changed (0|1), public view changed (0|1), previous availability ('' = available), custom status changed
-- (0|1), <status reply>} or error
-- USER_NOT_FOUND.
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
-- The moment as it is stored, formatted once (a number passed to redis.call is formatted as a float each time).
local now_text = string.format('%d', now)
local writes = {}
if s[1] == 'online' then
    s[3] = now_text
    writes[#writes + 1] = 'la'
    writes[#writes + 1] = s[3]
end
-- What the public saw before (read_public's shape).
local before = public_of(s)
local previous = s[9] or ''
local changed = 0
local custom_changed = 0
-- Stores `value` in `field` (read_with_copy's position `index`): deleted now when '', else written with the rest.
local function put(field, index, value)
    if value == '' then
        redis.call('HDEL', KEYS[1], field)
        s[index] = nil
    else
        writes[#writes + 1] = field
        writes[#writes + 1] = value
        s[index] = value
    end
end
if ARGV[6] ~= '1' and (s[2] or '') ~= ARGV[1] then
    changed = 1
    custom_changed = 1
    put('cs', 2, ARGV[1])
end
-- SPEC §10.2: a custom status set or cleared brings its expiry (or none) with it.
local expires = (ARGV[6] ~= '1' and ARGV[1] ~= '') and ARGV[8] or ''
if ARGV[6] ~= '1' and (s[13] or '') ~= expires then
    changed = 1
    put('ce', 13, expires)
end
local wanted = ARGV[7]
if wanted == 'available' then
    wanted = ''
end
if ARGV[7] ~= '' and (s[9] or '') ~= wanted then
    changed = 1
    put('av', 9, wanted)
    if wanted == 'invisible' then
        -- SPEC §10.5: shown as a user who went offline now, or as they were when not online.
        local grace = tonumber(ARGV[9]) or 0
        if s[1] == 'online' and grace > 0 then
            -- As a drop: still seen as they were until the grace ends. An offline grace already running (no device
            -- left) is the drop others will see end.
            local g = redis.call('HMGET', KEYS[1], 'gd', 'gu')
            local ends = now + grace
            s[11], s[12] = hidden_online_of(before), now_text
            if g[1] and g[2] then
                s[12], ends = g[1], tonumber(g[2])
            end
            writes[#writes + 1] = 'hu'
            writes[#writes + 1] = string.format('%d', ends)
        elseif s[1] == 'online' then
            s[11], s[12] = 'offline', now_text
        else
            s[11], s[12] = s[1] or 'unlogined', s[3] or ''
        end
        writes[#writes + 1] = 'ht'
        writes[#writes + 1] = s[11]
        writes[#writes + 1] = 'hl'
        writes[#writes + 1] = s[12]
    elseif previous == 'invisible' then
        if s[1] ~= 'online' and s[12] then
            -- Leaving it while not online: others keep the lastActiveAt they were shown (a later one would tell them
            -- the user had been online meanwhile), and it becomes the user's own.
            if s[12] == '' then
                redis.call('HDEL', KEYS[1], 'la')
                s[3] = nil
            else
                s[3] = s[12]
                writes[#writes + 1] = 'la'
                writes[#writes + 1] = s[3]
            end
        end
        redis.call('HDEL', KEYS[1], 'ht', 'hl', 'hu')
        s[11], s[12] = nil, nil
    end
end
local public_change = 0
if changed == 1 then
    -- bump_version, folded into the one write.
    s[4] = string.format('%d', (tonumber(s[4]) or 0) + 1)
    writes[#writes + 1] = 'v'
    writes[#writes + 1] = s[4]
    writes[#writes + 1] = 'vt'
    writes[#writes + 1] = now_text
    -- settle_public, folded into the one write.
    local pv = tonumber(before[6] or before[4] or '0')
    if public_key(before) ~= public_key(public_of(s)) then
        public_change = 1
        pv = pv + 1
        writes[#writes + 1] = 'pt'
        writes[#writes + 1] = now_text
    end
    s[10] = string.format('%d', pv)
    writes[#writes + 1] = 'pv'
    writes[#writes + 1] = s[10]
end
if #writes > 0 then
    redis.call('HSET', KEYS[1], unpack(writes))
end
local reply = reply_from_copy(s)
if changed == 1 then
    publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply, public_change)
end
return with_header({ changed, public_change, previous, custom_changed }, reply)
