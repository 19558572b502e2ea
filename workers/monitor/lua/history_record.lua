-- history_record (history.HistoryStore.append): append a point, after copies of the last one.
-- KEYS: the recorder lease, then one sorted set per resolution, the 1 s one first.
-- ARGV: holder, t (ms; 0: the server's clock now), the point's members but "t" (JSON
-- members: '"s":{...},"y":{...}'), carry_from
-- (ms; 0: none), then step_ms, keep_ms, max_points per resolution.
-- carry_from is the time of the point this holder recorded last. While it is still the newest
-- 1 s point, nothing changed since (the holder writes only on a change, or to keep the history
-- fresh): a copy of it is added each step up to the new point, so charts draw the level it
-- held, not a ramp or a gap. Anything else (another holder's point, none) is a real gap.
-- Returns {-1, 0} when another process holds the lease, else {sets appended to, t}.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {-1, 0} end
local t = tonumber(ARGV[2])
if t == 0 then
  local now = redis.call('TIME')
  t = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
local newest = {}
for i = 2, #KEYS do newest[i] = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES') end
local points = {}
local carry, step = tonumber(ARGV[4]), tonumber(ARGV[5])
if carry > 0 and newest[2][2] and tonumber(newest[2][2]) == carry then
  local at = carry + step
  -- Half a step clear of the new point; never more copies than the 1 s set keeps.
  while at <= t - step / 2 and #points < tonumber(ARGV[7]) do
    local stamp = '{"t":' .. string.format('%d', at)
    points[#points + 1] = {at, (string.gsub(newest[2][1], '^{"t":%d+', stamp, 1))}
    at = at + step
  end
end
points[#points + 1] = {t, '{"t":' .. string.format('%d', t) .. ',' .. ARGV[3] .. '}'}
local added = 0
for i = 2, #KEYS do
  local step_i = tonumber(ARGV[3 * i - 1])
  local keep = tonumber(ARGV[3 * i])
  local cap = tonumber(ARGV[3 * i + 1])
  local last = newest[i][2] and math.floor(tonumber(newest[i][2]) / step_i)
  local zadd = {}
  for _, point in ipairs(points) do
    local bucket = math.floor(point[1] / step_i)
    if (not last) or last < bucket then
      zadd[#zadd + 1] = point[1]
      zadd[#zadd + 1] = point[2]
      last = bucket
    end
  end
  if #zadd > 0 then
    redis.call('ZADD', KEYS[i], unpack(zadd))
    added = added + 1
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. string.format('%d', t - keep))
    redis.call('ZREMRANGEBYRANK', KEYS[i], 0, -cap - 1)
  end
end
return {added, t}
