-- SPEC §10.2 and §10.3 (§10.7: an app with nothing due costs the sweeps nothing): after a sweep of an app's due-time
-- index, the app's score becomes its earliest remaining entry (or lease), or the app leaves the set when its index is
-- empty; unless a writer marked the app since the sweep took it (its generation moved, due_app_mark.lua): the writer's
-- entry may be missing from what the sweep read, so the score the writer left (no later than its entry) stays, and the
-- app is swept again then. The generation stays when the app leaves: a later mark moves it on from there.
-- KEYS: the apps (sorted set), their generations (hash)
-- ARGV: appId, the generation the sweep took the app with, the earliest remaining entry (epoch ms; '' = none)
-- Reply: 1 settled, 0 left as the writer left it
if (redis.call('HGET', KEYS[2], ARGV[1]) or '0') ~= ARGV[2] then
    return 0
end
if ARGV[3] == '' then
    redis.call('ZREM', KEYS[1], ARGV[1])
else
    redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
