-- SPEC §7 admin `DELETE /v1/apps/{appId}`, the work of a crash-safe deletion: a run of the deletion takes (or renews)
-- the claim on a tombstone before each step, so that one run at a time removes the app's keys, and the claim of a run
-- whose node died lapses. The owner is a token of one run, never of a node: only the run that holds the claim renews
-- it, and another run on the same node (its housekeeping) finds it busy.
-- KEYS: deletion tombstone
-- ARGV: owner token of this run, lease ms
-- Reply: {1, API key digest, ms since the tombstone was set} claimed; {0} claimed by another live node; {-1} no tombstone.
local tomb = KEYS[1]
local fields = redis.call('HMGET', tomb, 'key', 'since', 'owner', 'until')
if not fields[2] then
    return { -1 }
end
local now = now_ms()
if fields[3] ~= ARGV[1] and tonumber(fields[4] or 0) > now then
    return { 0 }
end
redis.call('HSET', tomb, 'owner', ARGV[1], 'until', now + tonumber(ARGV[2]))
return { 1, fields[1] or '', now - tonumber(fields[2]) }
