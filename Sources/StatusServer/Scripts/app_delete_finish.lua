-- SPEC §7 admin `DELETE /v1/apps/{appId}`, the last step of a crash-safe deletion: once every key of the app is gone,
-- the claiming node removes the tombstone, and the appId may be created again.
-- KEYS: deletion tombstone
-- ARGV: owner id
-- Reply: 1 removed, 0 the claim was lost to another node (which finishes instead).
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
    return 0
end
redis.call('DEL', KEYS[1])
return 1
