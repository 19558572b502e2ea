-- move_due (timers.delayed.move_due): move the due delayed events into their stream.
-- KEYS: the delayed sorted set, the stream (one slot). ARGV: the most to move in this call.
-- One script reads, XADDs and removes, so an event enters the stream exactly once however
-- many timers run it at the same moment: a second call finds it gone.
-- Returns {moved, the next due time (ms; -1: none left), the server's clock (ms)}.
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms, 'LIMIT', 0, tonumber(ARGV[1]))
for _, envelope in ipairs(due) do
  redis.call('XADD', KEYS[2], '*', 'event', envelope)
end
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local next_ms = -1
if first[2] then next_ms = tonumber(first[2]) end
return {#due, next_ms, now_ms}
