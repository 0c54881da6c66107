-- SPEC §10.2: removes entries of an app's due-time index that the calling node handled, unless they were written again
-- since it took them (the user set another expiry: their score is no longer the lease's).
-- KEYS: the app's expiry index
-- ARGV: the lease's score, then userIds
-- Reply: how many were removed.
local removed = 0
for i = 2, #ARGV do
    local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
    if score and tonumber(score) == tonumber(ARGV[1]) then
        removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
    end
end
return removed
