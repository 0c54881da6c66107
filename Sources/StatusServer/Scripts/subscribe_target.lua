-- SPEC §4 subscribeUserStatus: an unknown user is a per-id failure (USER_NOT_FOUND) and is not subscribed to; SPEC §7
-- deleting a user removes every other user's subscription to them, found through the reverse index written here,
-- in the target's slot, before the subscription itself (StatusOperations.subscribe). Runs only for a call the rate
-- limit accepted (SPEC §10.7: a refused call touches no target).
-- KEYS: the target's profile, the target's reverse index of subscribers
-- ARGV: the subscriber's userId
-- Reply: 1 when the target exists (and the subscriber is recorded), 0 when it does not (nothing written).
if redis.call('EXISTS', KEYS[1]) == 0 then
    return 0
end
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
