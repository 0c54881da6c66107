-- SPEC §2 lastActiveAt: while a user is online, every request they make is activity, including the free, uncounted
-- getUserStatus of themself (StatusOperations.getUserStatus). A user who is not online, or does not exist, is left
-- untouched (no key is created).
-- KEYS: status
-- ARGV: none
-- Reply: 0.
touch_if_online(KEYS[1], now_ms())
return 0
