-- SPEC §7 admin `POST /v1/apps`: creates the app record once; an existing appId is APP_EXISTS, and so is an appId whose
-- deletion has not finished yet (its tombstone still stands), so a new app never inherits or loses data to it.
-- KEYS: app record, deletion tombstone
-- ARGV: config JSON, API key digest, token secret, created-at ms
-- Reply: 1 created, 0 exists, -1 being deleted.
if redis.call('EXISTS', KEYS[2]) == 1 then
    return -1
end
if redis.call('EXISTS', KEYS[1]) == 1 then
    return 0
end
redis.call('HSET', KEYS[1], 'config', ARGV[1], 'key', ARGV[2], 'secret', ARGV[3], 'createdAt', ARGV[4])
return 1
