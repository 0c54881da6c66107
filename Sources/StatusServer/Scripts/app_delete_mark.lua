-- SPEC §7 admin `DELETE /v1/apps/{appId}` (all its data goes), step 1 of a crash-safe deletion: in one step, the app
-- record goes (its API key, tokens and routes stop working at once) and a tombstone takes its place, claimed by the
-- deleting node for a lease. While the tombstone stands the appId cannot be created again; any node finishes the
-- deletion (app_delete_claim.lua) if this one dies.
-- KEYS: app record, deletion tombstone
-- ARGV: owner id, lease ms
-- Reply: {1, API key digest} marked and claimed; {2, API key digest} a deletion was already under way; {0} no such app.
local tomb = KEYS[2]
if redis.call('EXISTS', tomb) == 1 then
    return { 2, redis.call('HGET', tomb, 'key') or '' }
end
local digest = redis.call('HGET', KEYS[1], 'key')
if not digest then
    return { 0 }
end
local now = now_ms()
redis.call('HSET', tomb, 'key', digest, 'since', now, 'owner', ARGV[1], 'until', now + tonumber(ARGV[2]))
redis.call('DEL', KEYS[1])
return { 1, digest }
