-- SPEC §7 `PUT /users/{userId}`: creates or replaces the profile in one step (no reader sees it half written).
-- A user created (again) gets a fresh token generation, kept across updates: tokens carry it, so tokens of a deleted
-- user never work for a user created later under the same id (SPEC §7).
-- SPEC §2 last-seen privacy and role-scoped presence read the profile's `lastSeenPrivacy` and `role` through the status
-- hash's read copy (lib.lua status_reply), rewritten here in the same step.
-- KEYS: profile, status, devices
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
status_reply(s, KEYS[1], KEYS[3], true)
status_flush(s)
return { created, created_at }
