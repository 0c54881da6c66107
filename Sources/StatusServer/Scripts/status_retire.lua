-- SPEC §10.5 "versions never go backwards for any viewer", across a deletion (SPEC §7 `DELETE /users/{userId}`): the
-- deletion removes the user's status hash and keeps its two versions in a key of their own, from which a user created
-- again under the id starts (profile_put.lua). A watcher, or a client that drops what is older than what it holds
-- (SPEC §2), then hears the new user's changes at once, never as older than the deleted user's last one.
-- The deletion is a change like any other: the new user is `unlogined` with no custom status, available; `version`
-- moves by 1 when the deleted user's own view was anything else, and the public version when what the public saw was
-- (lastActiveAt, which moves no version, left aside). A deletion run again after one interrupted keeps the versions
-- already kept. The role the user had is kept beside them: a node that missed the deletion's departure during a bus
-- gap tells `roles:` scopes of the deleted user as the departure would have (FanoutService, StatusRepository.retired).
-- What is kept expires after ARGV[1] ms (30 days, StatusRetire.keepMs): an app that creates and deletes users under
-- ever new ids does not grow Redis for ever; a user created again under the id after that starts from version 0.
-- SPEC §6, §10.3 "the deletion of the user ... watchers are told as for any kick": the deletion is published like any
-- change (lib.lua publish_status), in the same step that keeps the versions, as the new user starts: `unlogined`, at
-- the kept versions, with the role. A watcher whose view of the user it changes hears it (the departure, the kick
-- before this step, already showed the public `unlogined`), and a node whose bus feed was down when the departure was
-- published hears this instead, once the feed is back: the deletion removes every subscription and friendship to the user only after this step, and a node that
-- missed this too reads what is kept before it reads their relationships again (FanoutService). Nothing is published
-- for a user who never had a status.
-- KEYS: status, the kept versions (UserKeys.retiredVersions)
-- ARGV: how long the versions are kept (ms), appId, userId, user channel, app slot channel (docs/bus.md)
-- Reply: {version, public version} kept ('0' each for a user who never changed).
local s = read_with_copy(KEYS[1])
local kept = redis.call('HMGET', KEYS[2], 'v', 'pv')
local version = tonumber(s[V] or '0')
local public_version = tonumber(s[PV] or s[V] or '0')
if s[V] then
    if (s[T] or 'unlogined') ~= 'unlogined' or s[CS] or (s[AV] or 'available') ~= 'available' or s[CE] then
        version = version + 1
    end
    local seen = public_of(s)
    seen[3] = false
    seen[8] = false
    if public_key(seen) ~= 'unlogined|||' then
        public_version = public_version + 1
    end
end
version = math.max(version, tonumber(kept[1] or '0'))
public_version = math.max(public_version, tonumber(kept[2] or '0'))
local version_text = string.format('%d', version)
local public_text = string.format('%d', public_version)
redis.call('DEL', KEYS[1])
if version > 0 or public_version > 0 then
    redis.call('HSET', KEYS[2], 'v', version_text, 'pv', public_text)
    if s[PR] and s[PR] ~= '' then
        redis.call('HSET', KEYS[2], 'r', s[PR])
    end
    redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
if s[V] then
    local reply = { 'unlogined', '', '', version_text, s[PR] or '', s[PP] or '', '', public_text, '', '', '', '' }
    publish_status(ARGV[4], ARGV[5], ARGV[2], ARGV[3], 1, reply, 1)
end
return { version_text, public_text }
