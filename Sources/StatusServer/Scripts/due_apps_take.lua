-- SPEC §10.2 and §10.3 (§10.7: the sweeps' work is bounded by the apps with something due): takes the apps whose
-- earliest due-time entry fell due (score no later than now) and leaves them to the calling node for `claim ms` (their
-- score moves there, so that other nodes skip them meanwhile, and a node that dies holding one leaves it to the next
-- sweep once the claim ends). Each comes with its generation (due_app_mark.lua), which the node hands back when it
-- settles the app (due_app_settle.lua).
-- "Now" is the earlier of the node's clock and Redis's (as in due_take.lua).
-- KEYS: the apps (sorted set), their generations (hash)
-- ARGV: now (epoch ms, the node's clock), claim ms, most apps to take
-- Reply: {appId, generation, ...}
local redis_now = now_ms()
local now = math.min(tonumber(ARGV[1]), redis_now)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local reply = {}
local claimed = redis_now + tonumber(ARGV[2])
for _, app in ipairs(due) do
    redis.call('ZADD', KEYS[1], claimed, app)
    reply[#reply + 1] = app
    reply[#reply + 1] = redis.call('HGET', KEYS[2], app) or '0'
end
return reply
