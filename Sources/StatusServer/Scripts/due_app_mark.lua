-- SPEC §10.2 and §10.3 (and §10.7: one request does bounded work, so an app with nothing due costs the sweeps nothing):
-- the apps with a due-time index (custom status expiries, offline graces) are a sorted set scored by when the app's
-- earliest entry falls due, beside a generation per app. A writer calls this once its entry is in the app's index
-- (due-time indexes live in the app's slot, this set in another): the app's score becomes no later than the entry
-- (`ZADD LT`), and its generation moves, so that a sweep that looked at the app before cannot set its score from an index
-- it read without the entry (due_app_settle.lua). Whichever order the sweep's steps and the writer's come in, the app's
-- score is never later than an entry of its index once this ran.
-- KEYS: the apps (sorted set), their generations (hash)
-- ARGV: appId, when the entry falls due (epoch ms)
-- Reply: the app's generation
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
return redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
