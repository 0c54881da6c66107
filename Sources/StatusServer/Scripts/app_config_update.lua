-- SPEC §3: a config PATCH applies to the config it was validated against, or is retried (compare and set).
-- KEYS: app record
-- ARGV: expected config JSON, new config JSON
-- Reply: 1 written, 0 changed meanwhile, -1 no such app.
local current = redis.call('HGET', KEYS[1], 'config')
if not current then
    return -1
end
if current ~= ARGV[1] then
    return 0
end
redis.call('HSET', KEYS[1], 'config', ARGV[2])
return 1
