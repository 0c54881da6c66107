-- SPEC §10.7: an app whose webhook queue was found empty leaves the index of apps with queued events, unless it was
-- added again since the dispatcher read the index (its score moved): an event queued meanwhile is never stranded.
-- KEYS: the index (sorted set)
-- ARGV: appId, the score the dispatcher read
-- Reply: 1 removed, 0 kept
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
    redis.call('ZREM', KEYS[1], ARGV[1])
    return 1
end
return 0
