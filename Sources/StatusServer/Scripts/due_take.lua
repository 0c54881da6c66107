-- SPEC §10.2 and §10.3: takes the entries of one of an app's due-time indexes (member userId, score when it falls due,
-- epoch ms: custom status expiries, offline graces) that fell due, and leases them to the calling node: their score
-- moves `lease ms` past now, so another node takes them only if this one did not finish them in that time (it died).
-- Every node sweeps; each entry is done once.
-- KEYS: the index
-- ARGV: now (epoch ms), lease ms, most entries to take
-- Reply: {userId, due ms, ...} of the taken entries, earliest first.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
if #due == 0 then
    return due
end
local leased = tonumber(ARGV[1]) + tonumber(ARGV[2])
local args = {}
for i = 1, #due, 2 do
    args[#args + 1] = leased
    args[#args + 1] = due[i]
    due[i + 1] = string.format('%d', tonumber(due[i + 1]))
end
redis.call('ZADD', KEYS[1], unpack(args))
return due
