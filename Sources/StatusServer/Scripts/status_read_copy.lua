-- SPEC §4 getUserStatus: a status read is one HMGET of the status hash's read copy (lib.lua status_reply). This
-- script serves the users whose status hash has no copy yet (last written by an earlier version): it writes the copy
-- from the profile and the devices, then answers the same HMGET, so the reader decodes one shape. A user without a
-- profile does not exist: nothing is written and the reply is nil.
-- KEYS: status, profile, devices
-- ARGV: the fields to return (StatusRepository.readFields)
-- Reply: the values of HMGET status ARGV..., or nil when the user does not exist.
if redis.call('EXISTS', KEYS[2]) == 0 then
    return false
end
local s = open_status(KEYS[1])
status_reply(s, KEYS[2], KEYS[3], true)
status_flush(s)
return redis.call('HMGET', KEYS[1], unpack(ARGV))
