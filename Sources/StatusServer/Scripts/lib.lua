-- Shared prelude, prepended to every statusd script.
-- SPEC §5: sliding-window rate limit per (app, user, operation); SPEC §2: the status object.

-- Milliseconds since the epoch from the Redis server clock, so that every node uses one clock. Read once per call: the
-- script runs as one atomic step, so one reading is its moment, and the deadline check below and the script's own
-- `now` share it instead of paying a second `TIME`.
local call_now_ms
local function now_ms()
    if not call_now_ms then
        local t = redis.call('TIME')
        call_now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    return call_now_ms
end

-- SPEC §7: a refused request changes nothing, then or later. Every call's first argument is the last moment (epoch ms on
-- this server's clock) at which it may still be applied: then its caller gives up on it and reports the failure. A call
-- that reaches Redis later (held up on a network path that came back) changes nothing. 0: no deadline. The argument is
-- taken off, so each script reads its own arguments from ARGV[1].
local call_deadline_ms = tonumber(table.remove(ARGV, 1)) or 0
if call_deadline_ms > 0 and now_ms() > call_deadline_ms then
    return redis.error_reply('STATUSD_LATE the call reached redis after its deadline; nothing was changed')
end

-- SPEC §10.6: a sliding-window check that writes nothing: the milliseconds until the oldest entry of `key` leaves the
-- window when `calls` entries are in it, else 0.
local function rate_refusal(key, now, calls, window_ms)
    local since = '(' .. string.format('%d', now - window_ms)
    if redis.call('ZCOUNT', key, since, '+inf') < calls then
        return 0
    end
    local oldest = redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local retry = tonumber(oldest[2]) + window_ms - now
    if retry < 1 then retry = 1 end
    return retry
end

-- SPEC §5: at most `calls` accepted calls in any window of `window_ms`; a rejected call is not counted.
-- Returns 0 when accepted (and records the call), else the milliseconds until the oldest accepted call leaves the window;
-- then the number of calls in the window, this one included when accepted.
-- The numbers go to Redis as integers formatted here: a Lua number passed to redis.call, or joined to a string, is
-- formatted as a float, which costs more than the command that receives it.
local function rate_limit(key, now, calls, window_ms)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window_ms))
    local count = redis.call('ZCARD', key)
    if count >= calls then
        local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
        local retry = tonumber(oldest[2]) + window_ms - now
        if retry < 1 then retry = 1 end
        return retry, count
    end
    redis.call('ZADD', key, string.format('%d', now), string.format('%d:%d', now, count))
    redis.call('PEXPIRE', key, string.format('%d', window_ms))
    return 0, count + 1
end

-- SPEC §2: while online, any request or connect is activity. `status_type` is the hash's `t` ('' when absent) where
-- the script has read it already; nil reads it.
local function touch_if_online(status_key, now, status_type)
    if (status_type or redis.call('HGET', status_key, 't')) == 'online' then
        redis.call('HSET', status_key, 'la', now)
    end
end

-- SPEC §5 for a rate-limited operation: counts the call, or returns the `{1, retry after ms}` reply of a rejected
-- one; an accepted call is activity (SPEC §2). Returns nil and the calls in the window (this one included) when
-- accepted. `status_type` as for touch_if_online.
local function admit(rate_key, status_key, calls, window_ms, status_type)
    local now = now_ms()
    local retry, count = rate_limit(rate_key, now, tonumber(calls), tonumber(window_ms))
    if retry > 0 then
        return { 1, retry }
    end
    touch_if_online(status_key, now, status_type)
    return nil, count
end

-- SPEC §4: subscriptions are kept while the user is online and expire `retention_ms` after the later of
-- the user's last moment online and the last change to the list.
local function refresh_retention(subs_key, status_key, retention_ms)
    if redis.call('HGET', status_key, 't') == 'online' then
        redis.call('PERSIST', subs_key)
    else
        redis.call('PEXPIRE', subs_key, retention_ms)
    end
end

-- SPEC §4 getUserStatus reads many users at once, so each user's status hash also carries a read copy of what a
-- status read needs from the profile and the devices: `pc` (the profile's createdAt: the user exists), `pr` (role),
-- `pp` (lastSeenPrivacy) and `dp` (the online devices as "deviceId platform deviceId platform ...": deviceIds have no
-- spaces, SPEC §1). Every script that changes the profile or the devices rewrites it in the same atomic step, so a
-- status read is one HMGET per user (StatusRepository.readFields). A status hash without `pc` belongs to a user that
-- does not exist, or was last written by an earlier version: status_read_copy.lua fills it then.
-- SPEC §10.1 / §10.5: besides its status (`t`, `cs`, `la`, `v`) a status hash holds the chosen availability `av`
-- (absent: available), the public version `pv` (absent: it is `v`, for data written before it existed), and while the
-- user is invisible what the public sees of them: `ht` (statusType, `offline` or `unlogined`) and `hl` (lastActiveAt,
-- '' for none), frozen when they stopped being seen online. `ce` is when the custom status clears itself (SPEC §10.2).
-- `ai` is '1' while automatic away holds (SPEC §10.1 / §10.4: every connected device is `idle` or `background`; kept
-- through an offline grace, when no device is connected). The public view is made of these fields and nothing else
-- (StatusCore PresenceView).
-- SPEC §10.3: while a user whose last device dropped is kept `online` by `offlineGraceSeconds`, `gd` is when it dropped
-- (their lastActiveAt if the grace runs out) and `gu` when the grace ends (grace_end.lua).
-- SPEC §10.5: with a grace, becoming invisible while seen online shows as a drop: until `hu` (when the grace ends,
-- grace_end.lua) the public still sees the user `online` as they were seen then, which `ht` holds as
-- `online:<shown availability>:<customStatusExpiresAt or ''>:<custom status>` (hidden_online), and `hl` is the moment
-- the user became invisible (or really dropped, if that came first): the lastActiveAt shown then and after.

-- The status hash's status fields with its read copy and its presence fields:
-- {t, cs, la, v, pc, pr, pp, dp, av, pv, ht, hl, ce, ai} (false where absent).
local function read_with_copy(status_key)
    return redis.call('HMGET', status_key, 't', 'cs', 'la', 'v', 'pc', 'pr', 'pp', 'dp', 'av', 'pv', 'ht', 'hl', 'ce', 'ai')
end

-- Each field's place in what read_with_copy reads. (Constants, not a table keyed by field: a table built on every
-- script call costs more than the lookups it would serve.)
local T, CS, LA, V, PC, PR, PP, DP, AV, PV, HT, HL, CE, AI = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14

-- A status hash read once and written once. A script that changes a status reads the hash with open_status, which
-- gives read_with_copy's array with the script's pending writes beside it (at 15 and 16: the `HSET` and the `HDEL` to
-- send); status_put changes a field in both, so that the array is always the hash as it will be and nothing is read
-- back, and status_flush sends the writes. Each Redis call of a script costs about as much as its arithmetic, and a
-- Lua table about as much as a small command: a connect and a departure each read the hash three times and wrote it
-- up to six times before, and the record adds two small tables.
local function open_status(status_key)
    local s = read_with_copy(status_key)
    -- The writes go beside the fields, at 15 and 16 (the array read_with_copy filled has room for them), and the
    -- `HSET`'s list is made with room for 8 fields: a table that grows is copied each time it doubles.
    s[15] = { 'HSET', status_key, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }
    s[16] = { 'HDEL', status_key }
    return s
end

-- Sets `field` of the record `s` to the string `value`, or deletes it when `value` is nil or false; `i` is the field's
-- place in the record when it is one of read_with_copy's fields (T, CS, ...). A change that leaves such a field as it
-- is costs nothing. A field set twice is sent twice in the one `HSET`, where the later value wins; only a field both
-- set and deleted is looked for among the writes already made.
local function status_put(s, field, value, i)
    if i then
        if (s[i] or nil) == (value or nil) then
            return
        end
        s[i] = value or false
    end
    local set, del = s[15], s[16]
    if value then
        for j = #del, 3, -1 do
            if del[j] == field then
                table.remove(del, j)
            end
        end
        set[#set + 1] = field
        set[#set + 1] = value
    else
        for j = #set - 1, 3, -2 do
            if set[j] == field then
                table.remove(set, j)
                table.remove(set, j)
            end
        end
        del[#del + 1] = field
    end
end

-- Sends the record's writes, in one `HSET` and one `HDEL`; once, at the end of the script.
local function status_flush(s)
    if #s[15] > 2 then
        redis.call(unpack(s[15]))
    end
    if #s[16] > 2 then
        redis.call(unpack(s[16]))
    end
end

-- SPEC §2: `version` +1 on every change of statusType or customStatus. `vt` records when it last moved, so that a
-- device resuming a session (SPEC §7) is sent the users whose version moved since it lost its socket. Numbers are
-- stored as the decimal integers formatted here (`now_text`: the script's moment, formatted once): a Lua number passed
-- to redis.call is formatted as a float, which costs more than the command that receives it.
local function status_bump(s, now_text)
    status_put(s, 'v', string.format('%d', (tonumber(s[4]) or 0) + 1), V)
    status_put(s, 'vt', now_text)
end

-- The fields of the status hash the public view is made of, out of what read_with_copy read (a new table, so that it
-- keeps what the public saw before the script's changes): {t, cs, la, v, av, pv, ht, hl, ce, ai}.
local function public_of(s)
    return { s[1], s[2], s[3], s[4], s[9], s[10], s[11], s[12], s[13], s[14] }
end

-- SPEC §10.1: the availability shown while online (`p` as public_of gives it): `away` while the user chose `available`
-- and automatic away holds.
local function shown_availability(p)
    local av = p[5] or 'available'
    if av == 'available' and p[10] == '1' then
        return 'away'
    end
    return av
end

-- SPEC §10.5: the public view an `ht` of an invisible user still seen online holds (see above): its shown
-- availability, customStatusExpiresAt ('' for none) and custom status ('' for none); nil for any other `ht`.
local function hidden_online(ht)
    if not ht then
        return nil
    end
    local av, expires, custom = string.match(ht, '^online:([^:]*):([^:]*):(.*)$')
    if not av then
        return nil
    end
    return { av = av, expires = expires, custom = custom }
end

-- The `ht` of hidden_online for the public view `p` (public_of's shape) of a user seen online.
local function hidden_online_of(p)
    return 'online:' .. shown_availability(p) .. ':' .. (p[9] or '') .. ':' .. (p[2] or '')
end

-- SPEC §10.5: a string that is equal for two states exactly when the public view of them is the same (apart from its
-- version). `p` as public_of gives it. An invisible user looks like a user who is not online with no custom status, or,
-- until their grace ends, exactly as they were seen online (so that leaving invisibility then changes nothing seen).
local function public_key(p)
    local av = p[5] or 'available'
    if av == 'invisible' then
        local seen = hidden_online(p[7])
        if seen then
            return 'online|' .. seen.custom .. '|' .. seen.av .. '|' .. seen.expires
        end
        return (p[7] or 'offline') .. '||' .. (p[8] or '') .. '|'
    end
    local t = p[1] or 'unlogined'
    if t == 'online' then
        return 'online|' .. (p[2] or '') .. '|' .. shown_availability(p) .. '|' .. (p[9] or '')
    end
    return t .. '|' .. (p[2] or '') .. '|' .. (p[3] or '') .. '|' .. (p[9] or '')
end

-- SPEC §10.5: after a change that moved `v`, moves `pv` by exactly 1 when the public view changed, and only then.
-- `before` is public_of the record before the change. A hash without `pv` starts from its `v` before the change.
-- Returns 1 when the public view changed, else 0.
local function status_settle(s, before, now_text)
    local pv = tonumber(before[6] or before[4] or '0')
    if public_key(before) ~= public_key(public_of(s)) then
        status_put(s, 'pv', string.format('%d', pv + 1), PV)
        status_put(s, 'pt', now_text)
        return 1
    end
    if not before[6] then
        status_put(s, 'pv', string.format('%d', pv), PV)
    end
    return 0
end

-- SPEC §10.4: a device's word in the read copy and the status reply: its platform, then `:idle` or `:background`
-- when it is not `active` (`s` of the stored device; absent: active).
local function device_word(d)
    if d.s then
        return d.p .. ':' .. d.s
    end
    return d.p
end

-- A user's devices, read and decoded once for the steps of a script that need them: {deviceId1, device1, ...}.
local function read_devices(devices_key)
    local devices = redis.call('HGETALL', devices_key)
    for i = 2, #devices, 2 do
        devices[i] = cjson.decode(devices[i])
    end
    return devices
end

-- SPEC §10.1 / §10.4: sets `ai` from the devices' states (`devices` as read_devices gives them): '1' when every
-- connected device is `idle` or `background`, absent when one is `active`. With no device connected (an offline grace)
-- it is left as it was, so that a drop shows nobody a change of availability.
local function status_auto_away(s, devices)
    if #devices == 0 then
        return
    end
    for i = 2, #devices, 2 do
        if not devices[i].s then
            status_put(s, 'ai', nil, AI)
            return
        end
    end
    status_put(s, 'ai', '1', AI)
end

-- The status reply (below) of `s` (read_with_copy's shape) with this role and last-seen privacy, before its devices.
local function reply_with(s, role, privacy)
    return { s[1] or 'unlogined', s[2] or '', s[3] or '', s[4] or '0', role or '', privacy or '', s[9] or '',
        s[10] or s[4] or '0', s[11] or '', s[12] or '', s[13] or '', s[14] or '' }
end

-- The status reply of what read_with_copy read, for a hash that has its copy.
local function reply_from_copy(s)
    local reply = reply_with(s, s[6], s[7])
    for word in string.gmatch(s[8] or '', '%S+') do
        reply[#reply + 1] = word
    end
    return reply
end

-- The status object of the record `s` as a flat reply: {t, cs|'', la|'', v, role|'', lastSeenPrivacy|'', av|'', pv,
-- ht|'', hl|'', ce|'', ai|'', device1, device_word1, ...}; called once the script's other changes are made.
-- The profile's role and last-seen privacy travel with it: who may hear of the change, and who may see lastActiveAt.
-- Scripts that change neither the devices nor the profile (custom status, heartbeat) read them from the read copy
-- (above). With `refresh_copy` (every script that changes the devices or the profile passes it), or when the hash has
-- no copy yet, they are read from the profile and the devices and the copy is rewritten (sent by status_flush).
-- `devices`, when the script already has them from read_devices (and has not changed them since), saves reading and
-- decoding them again. `profile`, when the script has read {createdAt, role, lastSeenPrivacy} of the profile already,
-- saves reading it again.
local function status_reply(s, profile_key, devices_key, refresh_copy, devices, profile)
    if s[5] and not refresh_copy then
        return reply_from_copy(s)
    end
    profile = profile or redis.call('HMGET', profile_key, 'createdAt', 'role', 'lastSeenPrivacy')
    if not profile[1] and s[5] then
        -- A user being deleted: the profile goes first (before the devices are removed). Their departure still goes
        -- with the role and the last-seen privacy they had, from the read copy: `roles:` scopes that heard them hear it
        -- (SPEC §6, §10.3), and whoever may not see their lastActiveAt still does not.
        profile = { false, s[6], s[7] }
    end
    local reply = reply_with(s, profile[2], profile[3])
    local words = {}
    devices = devices or read_devices(devices_key)
    for i = 1, #devices, 2 do
        local word = device_word(devices[i + 1])
        reply[#reply + 1] = devices[i]
        reply[#reply + 1] = word
        words[#words + 1] = devices[i]
        words[#words + 1] = word
    end
    if profile[1] then
        status_put(s, 'pc', profile[1], PC)
        status_put(s, 'pr', profile[2], PR)
        status_put(s, 'pp', profile[3], PP)
        status_put(s, 'dp', table.concat(words, ' '), DP)
    end
    return reply
end

-- Prefixes a status reply with header values: the reply's values are appended to the header (inserting each header
-- value at the front instead moved every value of the reply once per header value).
local function with_header(header, reply)
    local n = #header
    for i = 1, #reply do
        header[n + i] = reply[i]
    end
    return header
end

-- SPEC §6 (who is told) starts here: a write that changed a status puts it on the bus in the same atomic step, so a
-- change is never stored without being announced, and it costs no second round trip. The message is the bus wire
-- format v1 of docs/bus.md: {"v":1,"type":"status","appId":...,"change":"status"|"devices","role":...,
-- "lastSeenPrivacy":...,"publicVersion":...,"publicChange":true|false,"hidden":{...},"autoAway":true,"status":{...}}.
-- It goes on two sharded channels, both in this user's hash slot (docs/bus.md): the user's own channel, heard by the
-- nodes whose devices watch the user, and the app's channel for this slot, heard by nodes with `all`/`roles:` scopes.
-- The app's channel only carries changes of the public view (SPEC §10.5: what an invisible user does is told to their
-- own devices only). A status change of a user nobody watches costs two lookups of absent channels.
-- `reply` is a status reply (see status_reply); `change` is 1 (status) or 2 (devices only); `public_change` is 1 when
-- the public view changed (status_settle).
local function publish_status(user_channel, app_channel, app_id, user_id, change, reply, public_change)
    -- The message is one concatenation (Lua joins a chain of `..` in one step, into one new string); only the parts
    -- that may be absent are made before it. Identifiers (SPEC §1), statusType, availability and platforms are written
    -- as they are: their characters never need escaping in JSON. So are the numbers (versions, epoch ms): the scripts
    -- store them as decimal integers, and reading one back as a Lua number to format it again cost a float parse and
    -- a float format each.
    local role, privacy, custom, active, devices, hidden, expires = '', '', '', '', '', '', ''
    if reply[5] ~= '' then
        role = ',"role":' .. cjson.encode(reply[5])
    end
    if reply[6] ~= '' then
        privacy = ',"lastSeenPrivacy":' .. cjson.encode(reply[6])
    end
    if reply[2] ~= '' then
        custom = ',"customStatus":' .. cjson.encode(reply[2])
    end
    if reply[3] ~= '' then
        active = ',"lastActiveAt":' .. reply[3]
    end
    if reply[11] ~= '' then
        expires = ',"customStatusExpiresAt":' .. reply[11]
    end
    local availability = reply[7] ~= '' and reply[7] or 'available'
    if availability == 'invisible' then
        local seen = hidden_online(reply[9])
        local shown = ''
        if seen then
            -- Still seen online (SPEC §10.5 with a grace): as they were seen then.
            shown = ',"availability":"' .. seen.av .. '"'
                .. (seen.custom ~= '' and (',"customStatus":' .. cjson.encode(seen.custom)) or '')
                .. (seen.expires ~= '' and (',"customStatusExpiresAt":' .. seen.expires) or '')
        end
        hidden = ',"hidden":{"statusType":"' .. (seen and 'online' or (reply[9] ~= '' and reply[9] or 'offline')) .. '"'
            .. (reply[10] ~= '' and (',"lastActiveAt":' .. reply[10]) or '') .. shown .. '}'
    end
    if #reply > 12 then
        local d = {}
        for i = 13, #reply, 2 do
            local platform, state = string.match(reply[i + 1], '^([^:]*):?(.*)$')
            d[#d + 1] = '{"deviceId":"' .. reply[i] .. '","platform":"' .. platform .. '","state":"'
                .. (state ~= '' and state or 'active') .. '"}'
        end
        devices = table.concat(d, ',')
    end
    local payload = '{"v":1,"type":"status","appId":"' .. app_id
        .. (change == 1 and '","change":"status"' or '","change":"devices"') .. role .. privacy
        .. ',"publicVersion":' .. reply[8]
        .. (public_change == 1 and ',"publicChange":true' or ',"publicChange":false') .. hidden
        .. (reply[12] == '1' and ',"autoAway":true' or '')
        .. ',"status":{"userId":"' .. user_id .. '","statusType":"' .. reply[1] .. '"' .. custom .. active .. expires
        .. ',"availability":"' .. availability .. '"'
        .. ',"version":' .. reply[4] .. ',"onlineDevices":[' .. devices .. ']}}'
    redis.call('SPUBLISH', user_channel, payload)
    if change == 1 and public_change == 1 then
        redis.call('SPUBLISH', app_channel, payload)
    end
end

-- SPEC §4 listing users by presence, §10.6 `roles:` snapshots, §7 resume: one user's update of the app's online index
-- (`keys`: online index, applied versions, recent changes, listed roles; `prefix`: the role indexes' prefix), applied
-- only if `version` is not older than the one the index holds, and logged in the recent changes at `now_text` either
-- way. `version` and `now_text` are decimal strings, sent as they are (a Lua number passed to redis.call is formatted
-- as a float). Used by presence_index.lua (batches of updates) and, on a single server, by device_connect.lua and
-- devices_remove.lua (their own update, in their step). Returns 1 when applied, 0 when older.
local function index_presence(keys, prefix, user, version, online, role, now_text)
    redis.call('ZADD', keys[3], now_text, user)
    local stored = tonumber(redis.call('HGET', keys[2], user) or '-1')
    if tonumber(version) < stored then
        return 0
    end
    redis.call('HSET', keys[2], user, version)
    local listed = redis.call('HGET', keys[4], user)
    if listed and (not online or listed ~= role) then
        redis.call('ZREM', prefix .. listed, user)
        redis.call('HDEL', keys[4], user)
    end
    if online then
        redis.call('ZADD', keys[1], '0', user)
        if role ~= '' and listed ~= role then
            redis.call('ZADD', prefix .. role, '0', user)
            redis.call('HSET', keys[4], user, role)
        end
    else
        redis.call('ZREM', keys[1], user)
    end
    return 1
end

-- The app's recent changes keep `keep` ms of entries (SPEC §7 resume looks back that far); `keep` as its argument's
-- decimal string.
local function trim_recent(recent_key, now, keep)
    redis.call('ZREMRANGEBYSCORE', recent_key, '-inf', string.format('(%d', now - tonumber(keep)))
    redis.call('PEXPIRE', recent_key, keep)
end
