-- SPEC §4 listing users by presence: the app's index of online users, applied in version order so that a late
-- update from another node never undoes a newer one.
-- SPEC §10.6 (a snapshot's cost is bounded by what it can return): beside it, per role, the index of the online users
-- with that role (`<role prefix><role>`, in the app's slot), and the role each online user is listed under, so that a
-- `roles:` scope reads only the users of its roles. A user is listed under the role their update carries.
-- SPEC §7 resume: the users also go into the app's log of recent changes (score = now), trimmed to `keep` ms, so that
-- a resuming device with presence `all` or `roles:` finds who changed while it was away.
-- Updates of one app are written in batches (OnlineIndexWriter.swift), in arrival order.
-- KEYS: online index (sorted set), applied versions (hash), recent changes (sorted set), listed roles (hash)
-- ARGV: keep ms, role prefix, then for each update: userId, version, online ('1'|'0'), role ('' = none)
-- Reply: how many updates were applied (the others were older than what the index holds).
local now = now_ms()
local now_text = string.format('%d', now)
local applied = 0
for i = 3, #ARGV, 4 do
    applied = applied + index_presence(KEYS, ARGV[2], ARGV[i], ARGV[i + 1], ARGV[i + 2] == '1', ARGV[i + 3], now_text)
end
trim_recent(KEYS[3], now, ARGV[1])
return applied
