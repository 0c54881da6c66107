-- SPEC §10.2 and §10.3: removes entries of a due-time index (due_take.lua) that the calling node handled, unless they
-- were written again since it took them (another expiry set, another drop: their score is no longer the lease's).
-- KEYS: the index
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
