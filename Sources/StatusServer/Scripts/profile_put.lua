-- SPEC §7 `PUT /users/{userId}`: creates or replaces the profile in one step (no reader sees it half written).
-- KEYS: profile
-- ARGV: now ms, then field/value pairs (name, role, tags, metadata)
-- Reply: {created (0|1), createdAt}
local created = 0
local created_at = redis.call('HGET', KEYS[1], 'createdAt')
if not created_at then
    created = 1
    created_at = ARGV[1]
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'createdAt', created_at, 'updatedAt', ARGV[1])
for i = 2, #ARGV, 2 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
return { created, created_at }
