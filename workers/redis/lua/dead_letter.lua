-- dead_letter (queue_dead_letter): the letter XADDed to the dead stream, then the entry
-- XACKed, in one call. A letter Redis refuses (the dead-letter key is not a stream) stops
-- the script before the XACK: the entry stays pending, never acked without its letter (in a
-- pipeline the XACK would run whatever the XADD did).
-- KEYS: stream, dead stream. ARGV: group, entry id, then the letter's field, value pairs.
redis.call('XADD', KEYS[2], '*', unpack(ARGV, 3))
return redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
