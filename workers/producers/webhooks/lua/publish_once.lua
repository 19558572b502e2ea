-- publish_once (replay.PublishOnce): add a webhook's event unless its body was seen.
-- KEYS: stream, seen key. ARGV: field, event JSON, event hash, window in s, durable (1/0).
-- The seen key holds "<entry id> <event hash>" of the first copy. A durable replay rewrites
-- it as it is: a write for the WAIT that follows to cover, and the replicas get the first
-- copy's XADD before it (replication keeps the primary's order).
local seen = redis.call('GET', KEYS[2])
if seen then
  if ARGV[5] == '1' then redis.call('SET', KEYS[2], seen, 'KEEPTTL') end
  return {0, seen}
end
local entry_id = redis.call('XADD', KEYS[1], '*', ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], entry_id .. ' ' .. ARGV[3], 'EX', ARGV[4])
return {1, entry_id}
