-- SPEC §10.2 and §10.3: takes the entries of one of an app's due-time indexes (member userId, score when it falls due,
-- epoch ms: custom status expiries, offline graces) that fell due, and leases them to the calling node: each moves from
-- the index to the index's leases, scored `lease ms` past now. While leased an entry is out of the index, so a write
-- meanwhile (another expiry, another drop) adds a fresh entry there rather than moving the lease. Leases that ran out
-- (their node died, or failed before finishing them) come back into the index first, due now: whoever takes them reads
-- the stored value again. Every node sweeps; each entry is handled by one node at a time.
-- "Now" is the earlier of the node's clock and Redis's: a node whose clock runs ahead takes nothing before it is due by
-- Redis's clock, which every node shares; and leases run on Redis's clock, so that one taken by such a node and never
-- finished comes back after `lease ms`, not that plus how far ahead its clock ran.
-- KEYS: the index, its leases
-- ARGV: now (epoch ms, the node's clock), lease ms, most entries to take
-- Reply: {the leases' score, userId, due ms, ...}: the taken entries, earliest first.
local redis_now = now_ms()
local now = math.min(tonumber(ARGV[1]), redis_now)
local leased = redis_now + tonumber(ARGV[2])
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', redis_now, 'LIMIT', 0, tonumber(ARGV[3]))
for _, user in ipairs(lapsed) do
    redis.call('ZADD', KEYS[1], 'LT', redis_now, user)
    redis.call('ZREM', KEYS[2], user)
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
local reply = { leased }
if #due == 0 then
    return reply
end
local leases = {}
local users = {}
for i = 1, #due, 2 do
    leases[#leases + 1] = leased
    leases[#leases + 1] = due[i]
    users[#users + 1] = due[i]
    reply[#reply + 1] = due[i]
    reply[#reply + 1] = string.format('%d', tonumber(due[i + 1]))
end
redis.call('ZREM', KEYS[1], unpack(users))
redis.call('ZADD', KEYS[2], unpack(leases))
return reply
