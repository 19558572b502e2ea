-- fire_tick (timers.schedules): publish one schedule's tick, once for the whole fleet.
-- KEYS: the stream's schedule ticks hash, the stream (one slot). ARGV: schedule name, tick
-- (epoch ms), the tick's envelope JSON, grace (ms).
-- The hash holds the last tick each schedule handled (``<name>``: published or skipped) and
-- the last it published (``<name>|published``): a tick no newer than the handled one is not
-- published again, however many timers race for it or after a restart. A tick older than
-- the grace is recorded but not published (a fleet down longer than that skips it).
-- Returns {1, entry id, previous tick} when published, {0, previous tick} when it already was,
-- {-1, previous tick} when skipped as too late, {-2, now ms} when it is not due yet.
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local tick = tonumber(ARGV[2])
if tick > now_ms then return {-2, now_ms} end
local last = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if last >= tick then return {0, last} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if now_ms - tick > tonumber(ARGV[4]) then return {-1, last} end
local id = redis.call('XADD', KEYS[2], '*', 'event', ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1] .. '|published', ARGV[2])
return {1, id, last}
