-- SPEC §2 / §7: a device connects (WebSocket or backend login). The first device makes the user `online`
-- (version +1); a further device changes `onlineDevices` only, unless it ends automatic away (SPEC §10.1: the shown
-- availability changed, version +1). Reconnecting with a connected deviceId replaces it. A device connecting during an
-- offline grace (SPEC §10.3) ends the grace and changes `onlineDevices` only.
-- SPEC §4: subscriptions are never dropped while the user is online.
-- SPEC §3 `loginPolicy`: the login kicks the user's other devices on the platforms the policy names (`singlePerPlatform`:
-- the login's own, `single`: all, `multi`: none; the set is decided by LoginPolicy in Swift), reason `loginPolicy`.
-- SPEC §3 `maxDevicesPerUser`: past it the earliest-connected of the remaining other devices are kicked too (reason
-- `tooManyDevices`). Both happen in this one step with the login, so the user never has more devices than allowed and
-- subscribers see one change at most.
-- SPEC §6: the change is published on the bus (docs/bus.md) by this script.
-- SPEC §7: a user token stops working once its user is deleted (even if created again): a WebSocket connect passes the
-- token's generation, checked here against the profile's, in the connect's own step.
-- SPEC §10.6 `connectRateLimit`: at most `connectCalls` accepted connects per user in any `connectWindowMs` (sliding
-- window, WebSocket and backend logins together); past it nothing is stored and the script answers
-- CONNECT_RATE_LIMITED with the milliseconds until the oldest connect leaves the window.
-- SPEC §7 resume: a device that presents a `resume` token is answered, in this same step, the resume point stored for
-- it (written by devices_remove.lua), read together with the device it replaces: whichever of the two the departure of
-- the token's session had reached, the node sees it, and a resume costs no round trip of its own to find its point.
-- SPEC §9 (a dead node's devices are found) and SPEC §4 (listing by presence), on a single server only: the node's
-- device list and the app's online index are written in this same step, so that a connect is one round trip. Their
-- keys are in other hash slots than the user's, which a cluster does not allow in one script: there the node writes
-- them in steps of their own (NodeRegistry.swift before the connect, OnlineIndexWriter.swift after it).
-- KEYS: status, profile, devices, subs, connect rate-limit log, the device's resume point[, node's device list, online
--       index, applied versions, recent changes, listed roles (a single server)]
-- ARGV: deviceId, device JSON {"p": platform, "n": node, "c": connection id, "k": "ws"|"api", "s": state (absent:
--       active, SPEC §10.4)},
--       login rules JSON {"maxDevices": n, "kickPlatforms": [platform, ...], "connectCalls": n?, "connectWindowMs": ms?},
--       appId, userId, user channel,
--       app slot channel (docs/bus.md), token generation ('' = no token to check), '1' to read the resume point[,
--       the node's device list member, recent changes keep ms, role indexes' prefix (with the single-server keys)]
-- Reply: {changed (1 status | 2 devices only), replaced device JSON | '', resume point | '', kicked count k,
--         (the public view changed: lib.lua status_settle, published with the change)
--         k x (deviceId, device JSON, 'loginPolicy'|'tooManyDevices'), <status reply>}, or error USER_NOT_FOUND (no
--         token) or TOKEN_REVOKED (the token's generation is not the user's, or the user is gone), or
--         CONNECT_RATE_LIMITED <retry after ms>.
local now = now_ms()
local rules = cjson.decode(ARGV[3])
-- SPEC §10.7: a connect past the limit is refused by the check alone, before anything of the user is read (a node that
-- knows the user asks no admission first, connect_admission.lua); it is counted below, once the token is checked.
if rules.connectCalls then
    local retry = rate_refusal(KEYS[5], now, tonumber(rules.connectCalls), tonumber(rules.connectWindowMs))
    if retry > 0 then
        return redis.error_reply('CONNECT_RATE_LIMITED ' .. retry)
    end
end
-- The profile is read once, for the token's check and for the status reply's role and last-seen privacy (a profile
-- always has `createdAt`: profile_put.lua writes it whole, and a deletion removes it whole).
local profile
if ARGV[8] ~= '' then
    local stored = redis.call('HMGET', KEYS[2], 'gen', 'createdAt', 'role', 'lastSeenPrivacy')
    if (stored[1] or stored[2]) ~= ARGV[8] then
        return redis.error_reply('TOKEN_REVOKED')
    end
    profile = { stored[2], stored[3], stored[4] }
else
    profile = redis.call('HMGET', KEYS[2], 'createdAt', 'role', 'lastSeenPrivacy')
    if not profile[1] then
        return redis.error_reply('USER_NOT_FOUND')
    end
end
if rules.connectCalls then
    -- Counted now that the token is checked; the check above admitted it in this same step.
    rate_limit(KEYS[5], now, tonumber(rules.connectCalls), tonumber(rules.connectWindowMs))
end
local now_text = string.format('%d', now)
local previous = redis.call('HGET', KEYS[3], ARGV[1]) or ''
-- The stored record is the device JSON with its heartbeat and connect moments added: the node sends an object without
-- them, which ends in `}`, and they are appended to it (decoding and encoding it cost more than the rest of what the
-- connect does with the record).
redis.call('HSET', KEYS[3], ARGV[1], string.sub(ARGV[2], 1, -2) .. ',"hb":' .. now_text .. ',"ct":' .. now_text .. '}')
redis.call('PERSIST', KEYS[4])

local kicked = {}
-- Most logins kick nobody: the other devices are only read when the policy names platforms or the limit is passed.
if #rules.kickPlatforms > 0 or redis.call('HLEN', KEYS[3]) > tonumber(rules.maxDevices) then
    -- The user's other devices, earliest connected first (ties by id, so every run orders them alike).
    local others = {}
    local all = redis.call('HGETALL', KEYS[3])
    for i = 1, #all, 2 do
        if all[i] ~= ARGV[1] then
            local d = cjson.decode(all[i + 1])
            others[#others + 1] = { id = all[i], raw = all[i + 1], ct = tonumber(d.ct or 0), p = d.p }
        end
    end
    table.sort(others, function(a, b)
        if a.ct == b.ct then
            return a.id < b.id
        end
        return a.ct < b.ct
    end)

    local kick_platforms = {}
    for _, platform in ipairs(rules.kickPlatforms) do
        kick_platforms[platform] = true
    end
    local function kick(other, reason)
        redis.call('HDEL', KEYS[3], other.id)
        kicked[#kicked + 1] = other.id
        kicked[#kicked + 1] = other.raw
        kicked[#kicked + 1] = reason
    end
    local remaining = {}
    for _, other in ipairs(others) do
        if kick_platforms[other.p] then
            kick(other, 'loginPolicy')
        else
            remaining[#remaining + 1] = other
        end
    end
    local excess = #remaining + 1 - tonumber(rules.maxDevices)
    for i = 1, excess do
        kick(remaining[i], 'tooManyDevices')
    end
end

local changed = 2
local public_change = 0
local s = open_status(KEYS[1])
local before = public_of(s)
-- SPEC §10.3: a device connecting during an offline grace ends it: the user never left `online`, so others are told
-- nothing and the version stands. (A grace runs only while the user is `online`.)
if before[1] == 'online' then
    status_put(s, 'gd', nil)
    status_put(s, 'gu', nil)
end
-- SPEC §10.1: a new device (active unless a backend login says otherwise) may end automatic away.
local devices = read_devices(KEYS[3])
status_auto_away(s, devices)
-- `la` with the change: the public view of a user online never shows it.
status_put(s, 'la', now_text, LA)
if before[1] ~= 'online' or shown_availability(before) ~= shown_availability(public_of(s)) then
    status_put(s, 't', 'online', T)
    status_bump(s, now_text)
    -- SPEC §10.5: an invisible user coming online changes nothing the public sees.
    public_change = status_settle(s, before, now_text)
    changed = 1
end
local resume_point = ''
if ARGV[9] == '1' then
    resume_point = redis.call('GET', KEYS[6]) or ''
end
local header = { changed, previous, resume_point, #kicked / 3 }
for i = 1, #kicked do
    header[#header + 1] = kicked[i]
end
local reply = status_reply(s, KEYS[2], KEYS[3], true, devices, profile)
status_flush(s)
publish_status(ARGV[6], ARGV[7], ARGV[4], ARGV[5], changed, reply, public_change)
if KEYS[7] then
    redis.call('SADD', KEYS[7], ARGV[10])
    if changed == 1 then
        local index = { KEYS[8], KEYS[9], KEYS[10], KEYS[11] }
        index_presence(index, ARGV[12], ARGV[5], reply[4], reply[1] == 'online', reply[5], now_text)
        trim_recent(KEYS[10], now, ARGV[11])
    end
end
return with_header(header, reply)
