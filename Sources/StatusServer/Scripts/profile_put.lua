-- SPEC §7 `PUT /users/{userId}`: creates or replaces the profile in one step (no reader sees it half written).
-- A user created (again) gets a fresh token generation, kept across updates: tokens carry it, so tokens of a deleted
-- user never work for a user created later under the same id (SPEC §7).
-- SPEC §2 last-seen privacy and role-scoped presence read the profile's `lastSeenPrivacy` and `role` through the status
-- hash's read copy (lib.lua status_reply), rewritten here in the same step.
-- SPEC §10.5 "versions never go backwards for any viewer": a user created again under the id of a deleted one starts
-- from the versions the deletion kept (status_retire.lua), so that whoever heard the deleted user hears the new one's
-- changes as newer. What was kept stays until it expires: a node that missed the deletion during a bus gap reads it to
-- tell the deleted user's subscribers and friends of the deletion (FanoutService), whether or not the user was created
-- again meanwhile.
-- KEYS: profile, status, devices, the kept versions of a deleted user (UserKeys.retiredVersions)
-- ARGV: now ms, new generation (used only when the user is created), then field/value pairs (name, role, tags, ...)
-- Reply: {created (0|1), createdAt}
local created = 0
local created_at = redis.call('HGET', KEYS[1], 'createdAt')
local generation = redis.call('HGET', KEYS[1], 'gen')
if not created_at then
    created = 1
    created_at = ARGV[1]
    generation = ARGV[2]
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'createdAt', created_at, 'updatedAt', ARGV[1])
if generation then
    redis.call('HSET', KEYS[1], 'gen', generation)
end
for i = 3, #ARGV, 2 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
local s = open_status(KEYS[2])
if created == 1 then
    local kept = redis.call('HMGET', KEYS[4], 'v', 'pv')
    if kept[1] then
        -- Both written (a hash without `pv` shows its `v` as the public version), neither below what the hash holds.
        local version = math.max(tonumber(kept[1]), tonumber(s[V] or '0'))
        local public_version = math.max(tonumber(kept[2]), tonumber(s[PV] or s[V] or '0'))
        status_put(s, 'v', string.format('%d', version), V)
        status_put(s, 'pv', string.format('%d', public_version), PV)
        -- SPEC §7 resume: the versions moved now, on the Redis clock that stamps every version change.
        local now_text = string.format('%d', now_ms())
        status_put(s, 'vt', now_text)
        status_put(s, 'pt', now_text)
    end
end
status_reply(s, KEYS[1], KEYS[3], true)
status_flush(s)
return { created, created_at }
