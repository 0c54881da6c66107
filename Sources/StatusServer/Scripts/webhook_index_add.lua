-- SPEC §10.7 (one app's receiver never delays another's deliveries): the index of apps with queued webhook events, which
-- the dispatchers go round. Each addition gets a new sequence number as its score, so that a dispatcher removes an
-- app only if nobody added it again since it looked (webhook_index_remove.lua).
-- KEYS: the index (sorted set), its sequence counter
-- ARGV: appId
-- Reply: the app's new score
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], seq, ARGV[1])
return seq
