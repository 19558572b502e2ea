-- cancel (waits.cancel.cancel_waits): operators cancel waiting runs; their waits end.
-- KEYS: the stream's waiting set, its delayed set. ARGV: the records' key head, keep_ms,
-- who, event hash 1, event hash 2, ...
-- A waiting record becomes cancelled: out of its index and the waiting set, its wake-up
-- taken from the delayed set. Returns how many were waiting.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = 0
for i = 4, #ARGV do
  local rec = ARGV[1] .. ARGV[i]
  local f = redis.call('HMGET', rec, 'state', 'kind', 'index', 'shapes', 'shape', 'envelope')
  if f[1] == 'waiting' then
    if f[2] == 'event' then
      redis.call('SREM', f[3], ARGV[i])
      if redis.call('HINCRBY', f[4], f[5], -1) <= 0 then redis.call('HDEL', f[4], f[5]) end
    end
    redis.call('ZREM', KEYS[1], ARGV[i])
    redis.call('ZREM', KEYS[2], f[6])
    redis.call('HSET', rec, 'state', 'cancelled', 'cancelled_by', ARGV[3], 'ended_at', now)
    redis.call('PEXPIRE', rec, tonumber(ARGV[2]))
    n = n + 1
  end
end
return n
