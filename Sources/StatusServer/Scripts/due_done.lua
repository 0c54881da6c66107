-- SPEC §10.2 and §10.3: finishes entries of a due-time index that the calling node took (due_take.lua): each lease
-- still held at the lease's score goes, and an entry whose moment has not come (the stored value says when) goes back
-- into the index at that moment, unless the index holds an earlier one for the user (written meanwhile): `ZADD LT`, so
-- putting an entry back never moves a newer, earlier one later. A handled entry (nothing stored, or cleared) is not
-- put back; an entry written into the index since it was taken stays there.
-- KEYS: the index, its leases
-- ARGV: the lease's score, then pairs of userId and when it falls due ('' = handled: nothing to put back)
-- Reply: how many leases were removed.
local removed = 0
for i = 2, #ARGV - 1, 2 do
    local score = redis.call('ZSCORE', KEYS[2], ARGV[i])
    if score and tonumber(score) == tonumber(ARGV[1]) then
        removed = removed + redis.call('ZREM', KEYS[2], ARGV[i])
    end
    if ARGV[i + 1] ~= '' then
        redis.call('ZADD', KEYS[1], 'LT', ARGV[i + 1], ARGV[i])
    end
end
return removed
