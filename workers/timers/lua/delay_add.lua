-- delay_add (timers.delayed.add): hold one event until it is due.
-- KEYS: the stream's delayed sorted set. ARGV: due (epoch ms; 0: the server's clock now plus
-- the delay), delay (ms), the envelope JSON.
-- The server's clock, not the publisher's, times a delay: every host's delay means the same.
-- Returns {due ms, 1 if it is now the set's first (the timer may be asleep past it), else 0}.
local due = tonumber(ARGV[1])
if due == 0 then
  local now = redis.call('TIME')
  due = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + tonumber(ARGV[2])
end
redis.call('ZADD', KEYS[1], due, ARGV[3])
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] == ARGV[3] then return {due, 1} end
return {due, 0}
