-- SPEC §8 at-least-once delivery: leases up to ARGV[2] of one app's events that are due now, hiding them for the
-- lease, so a node that dies mid-delivery leaves them to be taken again when it runs out. A due entry whose event is
-- gone (dropped past the bound) is forgotten.
-- KEYS: the app's webhook stream, its due set, its attempt counts
-- ARGV: lease ms, most events to take
-- Reply: {events left in the queue, ms until the next one is due (-1: none left), then id, body, generation, attempts
-- made for each event taken}
local stream, due, attempts = KEYS[1], KEYS[2], KEYS[3]
local now = now_ms()
local reply = { 0, -1 }
for _, id in ipairs(redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))) do
    local entry = redis.call('XRANGE', stream, id, id)[1]
    if entry then
        redis.call('ZADD', due, now + tonumber(ARGV[1]), id)
        local body, gen = '', ''
        local fields = entry[2]
        for i = 1, #fields, 2 do
            if fields[i] == 'body' then
                body = fields[i + 1]
            elseif fields[i] == 'gen' then
                gen = fields[i + 1]
            end
        end
        reply[#reply + 1] = id
        reply[#reply + 1] = body
        reply[#reply + 1] = gen
        reply[#reply + 1] = redis.call('HGET', attempts, id) or '0'
    else
        redis.call('ZREM', due, id)
        redis.call('HDEL', attempts, id)
    end
end
reply[1] = redis.call('ZCARD', due)
if reply[1] > 0 then
    local first = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
    reply[2] = math.max(0, tonumber(first[2]) - now)
end
return reply
