-- SPEC §4 getUserStatus of others, SPEC §5: counts the call in the caller's sliding window, or rejects it uncounted.
-- The caller's block lists come back in the same round trip (SPEC §4: blocked pairs see each other offline).
-- KEYS: rate-limit log, status, blocks (by me), blocked by
-- ARGV: calls, window ms
-- Reply: {0, blocked user...} when accepted, {1, retry after ms} when rate limited.
local rejected = admit(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
if rejected then
    return rejected
end
local reply = { 0 }
for _, id in ipairs(redis.call('SUNION', KEYS[3], KEYS[4])) do reply[#reply + 1] = id end
return reply
