-- SPEC §4, §10.5: one side of a block, in that user's slot. The user's own half of the pair (`blocks` or `blockedby`)
-- and the freeze of their own public version for the other side (`bk:<other>` in their status hash: what the other side
-- is shown from now on, unmoving while a block between them lasts) are written in one step, and the start of the mask
-- is published on the user's channels in the same step: every change of theirs published before it carries a public
-- version not above the freeze, every one after it is behind it on the same channels, so a node that hears it (in
-- order, FanoutService) stops showing the user to the other side exactly there. Reads take the freeze from the status
-- hash with the status itself (StatusRepository.statusReads), so a read never shows a version the freeze is below.
-- Lifting: the user's half goes; when no block between the two is left either way, the freeze goes and the end of the
-- mask is published.
-- KEYS: status, blocks (by the user), blockedby (the user is blocked by)
-- ARGV: 'block' | 'unblock', 'byMe' | 'me' (which half), the other userId, appId, the user's userId, the user's
-- channel, the user's app slot channel
-- The start of the mask carries the user's role (`pr`, the status hash's read copy of the profile's role), so that a
-- node tells the viewer's `roles:` sessions that hear of that role, as it tells subscribers and friends.
-- Reply: the frozen public version (block), or 1 when the mask ended, 0 when a block is left (unblock).
local mode, half, other = ARGV[1], ARGV[2], ARGV[3]
local field = 'bk:' .. other
local set = half == 'byMe' and KEYS[2] or KEYS[3]
local function announce(version)
    local role = version and redis.call('HGET', KEYS[1], 'pr')
    local payload = '{"v":1,"type":"mask","appId":' .. cjson.encode(ARGV[4]) .. ',"userId":' .. cjson.encode(ARGV[5])
        .. ',"viewer":' .. cjson.encode(other)
        .. (version and (',"publicVersion":' .. version) or '')
        .. ((role and role ~= '') and (',"role":' .. cjson.encode(role)) or '') .. '}'
    redis.call('SPUBLISH', ARGV[6], payload)
    redis.call('SPUBLISH', ARGV[7], payload)
end
if mode == 'block' then
    redis.call('SADD', set, other)
    local frozen = redis.call('HGET', KEYS[1], field)
    if not frozen then
        local versions = redis.call('HMGET', KEYS[1], 'pv', 'v')
        frozen = versions[1] or versions[2] or '0'
        redis.call('HSET', KEYS[1], field, frozen)
        announce(frozen)
    end
    return tonumber(frozen)
end
redis.call('SREM', set, other)
if redis.call('SISMEMBER', KEYS[2], other) == 1 or redis.call('SISMEMBER', KEYS[3], other) == 1 then
    return 0
end
if redis.call('HDEL', KEYS[1], field) == 1 then
    announce(nil)
end
return 1
