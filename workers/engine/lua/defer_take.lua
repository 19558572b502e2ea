-- defer_take (defer.Deferrals.take_due): up to ARGV[3] of the group's deferred entries whose
-- token is due, taken over by this consumer (ARGV[2]) whichever worker deferred them.
-- KEYS: the stream, the group's deferred set. ARGV: group, consumer, want, pull window ms.
-- An entry is taken only while still pending for the consumer that deferred it; its delivery
-- count goes up by one (the rerun), its idle time to 0. A deleted entry returns an empty list
-- (acked by the caller). Returns {entries, the next due time (ms, -1 for none), now (ms)}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Past the window, XAUTOCLAIM may take the entry (defer.GRACE_MS): never both.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[4]))
local out = {}
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(due) do
  redis.call('ZREM', KEYS[2], member)
  local owner, id = string.match(member, '^(.*)|([^|]+)$')
  local row = id and redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)[1]
  if row and row[2] == owner then
    local n = tonumber(row[4]) + 1
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'IDLE', 0, 'RETRYCOUNT', n, 'JUSTID')
    local entry = redis.call('XRANGE', KEYS[1], id, id)[1]
    table.insert(out, {id, n, entry and entry[2] or {}})
  end
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return {out, head[2] or '-1', now}
