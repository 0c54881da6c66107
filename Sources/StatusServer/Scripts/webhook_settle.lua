-- SPEC §8: an event that needs no further attempt (delivered, dropped after its last attempt, or its app has no
-- webhook any more) leaves the app's queue.
-- KEYS: the app's webhook stream, its due set, its attempt counts
-- ARGV: event id
-- Reply: 1
redis.call('XDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
