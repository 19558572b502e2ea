-- defer_queue (defer.queue_defer): write down when deferred entries' tokens are due, so that
-- any worker of the group can take them then (defer_take).
-- KEYS: the group's deferred set. ARGV: consumer, wait ms, pull window ms, keep ms, ids...
-- Members are <consumer>|<entry id>: who deferred it, so that a taker can tell an entry that
-- moved since (reclaimed, deferred again by another worker) from one still waiting.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = tonumber(ARGV[2])
for i = 5, #ARGV do
  redis.call('ZADD', KEYS[1], now + wait, ARGV[1] .. '|' .. ARGV[i])
end
-- Past its window an entry is left to XAUTOCLAIM: its idle time makes it claimable then.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
local keep = wait + tonumber(ARGV[4])
if redis.call('PTTL', KEYS[1]) < keep then
  redis.call('PEXPIRE', KEYS[1], keep)
end
return 0
