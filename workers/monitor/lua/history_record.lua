-- history_record (history.HistoryStore.record): append one point.
-- KEYS: the recorder lease, then one sorted set per resolution.
-- ARGV: holder, t (ms), point JSON, then step_ms, keep_ms, max_points per resolution.
-- Returns -1 when another process holds the lease, else the number of sets appended to.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local t = tonumber(ARGV[2])
local added = 0
for i = 2, #KEYS do
  local step = tonumber(ARGV[3 * i - 2])
  local keep = tonumber(ARGV[3 * i - 1])
  local cap = tonumber(ARGV[3 * i])
  local newest = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  if (not newest[2]) or math.floor(tonumber(newest[2]) / step) < math.floor(t / step) then
    redis.call('ZADD', KEYS[i], t, ARGV[3])
    added = added + 1
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. tostring(t - keep))
  redis.call('ZREMRANGEBYRANK', KEYS[i], 0, -cap - 1)
end
return added
