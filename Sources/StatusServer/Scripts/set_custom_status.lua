-- SPEC §4 setSelfStatus: sets or clears the caller's custom status and/or sets their availability (SPEC §10.1); a field
-- left out keeps its value, and a call that changes nothing notifies nobody.
-- SPEC §2: `version` +1 on every change of customStatus or availability; while online the request is activity.
-- SPEC §10.5: becoming invisible freezes what the public sees (`ht`, `hl`: offline since now when online, else the
-- status they had); leaving invisibility drops it (while not online, the frozen lastActiveAt stays: the moment others
-- saw the user leave); `pv` moves by 1 when the public view changed (lib.lua status_settle).
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
-- The status hash is read once, with its read copy of the profile and the devices, and written once (lib.lua
-- `open_status`). The copy's `pc` proves the user exists (a user's keys are deleted together), so `EXISTS` runs only
-- for a hash without one.
local s = open_status(KEYS[1])
if not s[5] then
    -- No read copy: the user does not exist, or the hash was last written by an earlier version, whose copy is
    -- written with this call's changes.
    if redis.call('EXISTS', KEYS[2]) == 0 then
        return redis.error_reply('USER_NOT_FOUND')
    end
    status_reply(s, KEYS[2], KEYS[3], true)
end
local now = now_ms()
local now_text = string.format('%d', now)
if s[1] == 'online' then
    status_put(s, 'la', now_text, LA)
end
-- What the public saw before (public_of's shape).
local before = public_of(s)
local previous = s[9] or ''
local changed = 0
local custom_changed = 0
if ARGV[6] ~= '1' and (s[2] or '') ~= ARGV[1] then
    changed = 1
    custom_changed = 1
    status_put(s, 'cs', ARGV[1] ~= '' and ARGV[1] or nil, CS)
end
-- SPEC §10.2: a custom status set or cleared brings its expiry (or none) with it.
local expires = (ARGV[6] ~= '1' and ARGV[1] ~= '') and ARGV[8] or ''
if ARGV[6] ~= '1' and (s[13] or '') ~= expires then
    changed = 1
    status_put(s, 'ce', expires ~= '' and expires or nil, CE)
end
local wanted = ARGV[7]
if wanted == 'available' then
    wanted = ''
end
if ARGV[7] ~= '' and (s[9] or '') ~= wanted then
    changed = 1
    status_put(s, 'av', wanted ~= '' and wanted or nil, AV)
    if wanted == 'invisible' then
        -- SPEC §10.5: shown as a user who went offline now, or as they were when not online.
        local grace = tonumber(ARGV[9]) or 0
        local ht, hl
        if s[1] == 'online' and grace > 0 then
            -- As a drop: still seen as they were until the grace ends. An offline grace already running (no device
            -- left) is the drop others will see end.
            local g = redis.call('HMGET', KEYS[1], 'gd', 'gu')
            local ends = now + grace
            ht, hl = hidden_online_of(before), now_text
            if g[1] and g[2] then
                hl, ends = g[1], tonumber(g[2])
            end
            status_put(s, 'hu', string.format('%d', ends))
        elseif s[1] == 'online' then
            ht, hl = 'offline', now_text
        else
            ht, hl = s[1] or 'unlogined', s[3] or ''
        end
        status_put(s, 'ht', ht, HT)
        status_put(s, 'hl', hl, HL)
    elseif previous == 'invisible' then
        if s[1] ~= 'online' and s[12] then
            -- Leaving it while not online: others keep the lastActiveAt they were shown (a later one would tell them
            -- the user had been online meanwhile), and it becomes the user's own.
            status_put(s, 'la', s[12] ~= '' and s[12] or nil, LA)
        end
        status_put(s, 'ht', nil, HT)
        status_put(s, 'hl', nil, HL)
        status_put(s, 'hu', nil)
    end
end
local public_change = 0
if changed == 1 then
    status_bump(s, now_text)
    public_change = status_settle(s, before, now_text)
end
status_flush(s)
local reply = reply_from_copy(s)
if changed == 1 then
    publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply, public_change)
end
return with_header({ changed, public_change, previous, custom_changed }, reply)
