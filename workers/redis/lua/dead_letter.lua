-- dead_letter (queue_dead_letter): the letter XADDed to the dead stream, added to its error
-- group (error_groups.lua), then the entry XACKed, in one call. A letter Redis refuses (the
-- dead-letter key is not a stream) stops the script before the XACK: the entry stays
-- pending, never acked without its letter (in a pipeline the XACK would run whatever the
-- XADD did).
-- KEYS: stream, dead stream, error groups index. ARGV: group, entry id, fingerprint, the
-- group's meta (JSON: kind, message, frame, error), event type, then the letter's field,
-- value pairs.
local dead_id = redis.call('XADD', KEYS[2], '*', unpack(ARGV, 6))
-- In pcall: a group that cannot be written (a key of another type, a record that is not
-- JSON) must never keep a letter from being written and its entry acked.
pcall(error_group_add, KEYS[3], ARGV[3], dead_id, ARGV[4], ARGV[5], ARGV[1])
return redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
