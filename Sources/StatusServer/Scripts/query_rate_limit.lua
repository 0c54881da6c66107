-- SPEC §4 getUserStatus of others and subscribeUserStatus, SPEC §5: counts the call in the caller's sliding window,
-- or rejects it uncounted (SPEC §10.7: before any of the call's targets is touched).
-- SPEC §4: the caller must exist (USER_NOT_FOUND otherwise, checked before anything is counted).
-- What the call needs of the caller's own keys comes back in the same round trip: the block lists (SPEC §4: blocked
-- pairs see each other offline) and which of the asked users are the caller's friends (SPEC §4 lastSeenPrivacy
-- `friends`; friendship is mutual, so the caller's set answers for all of them).
-- SPEC §10.5: with each blocked user comes their public version when the block began (the masked view carries it).
-- KEYS: rate-limit log, status, blocks (by me), blocked by, profile, friends, block versions
-- ARGV: calls, window ms, then the asked userIds
-- Reply (StatusOperations.QueryAdmission): {0, calls left in the window, n, blocked userId x n, their version at the
-- block ('' unknown) x n, friend flag (1|0) per asked userId} when accepted, {1, retry after ms} when rate limited, or
-- error USER_NOT_FOUND.
--
-- One read of the caller's status hash serves both the existence check (its read copy's `pc` proves the user exists,
-- lib.lua `status_reply`; `EXISTS` runs only for a hash without one) and the activity of an online caller.
local s = redis.call('HMGET', KEYS[2], 't', 'pc')
if not s[2] and redis.call('EXISTS', KEYS[5]) == 0 then
    return redis.error_reply('USER_NOT_FOUND')
end
local rejected, counted = admit(KEYS[1], KEYS[2], ARGV[1], ARGV[2], s[1] or '')
if rejected then
    return rejected
end
local blocked = redis.call('SUNION', KEYS[3], KEYS[4])
local reply = { 0, tonumber(ARGV[1]) - counted, #blocked }
for _, id in ipairs(blocked) do reply[#reply + 1] = id end
if #blocked > 0 then
    for _, version in ipairs(redis.call('HMGET', KEYS[7], unpack(blocked))) do reply[#reply + 1] = version or '' end
end
if #ARGV > 2 then
    for _, flag in ipairs(redis.call('SMISMEMBER', KEYS[6], unpack(ARGV, 3))) do reply[#reply + 1] = flag end
end
return reply
