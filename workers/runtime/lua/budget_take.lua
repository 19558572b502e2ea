-- budget_take (ratelimit.Limiter.take): one token of a budget for a holder (an event hash).
-- KEYS: the budget's hash (tokens, ts, taken, deferrals), its reservations (zset holder -> due ms).
-- ARGV: rate per second, burst, holder, stale ms. Returns {1, 0} when let through, else
-- {0, wait ms}: the holder is reserved the token due then, and its rerun takes it.
local rate, burst, holder, stale = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - stale)
local held = redis.call('ZSCORE', KEYS[2], holder)
if held then
  held = tonumber(held)
  if held <= now then
    redis.call('ZREM', KEYS[2], holder)
    redis.call('HINCRBY', KEYS[1], 'taken', 1)
    return {1, 0}
  end
  return {0, held - now}
end
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(b[1]) or burst, tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(now - ts, 0) * rate / 1000)
tokens = tokens - 1
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now)
if tokens >= 0 then
  redis.call('HINCRBY', KEYS[1], 'taken', 1)
  return {1, 0}
end
-- Reserved: the bucket refills to zero, paying for this token, -tokens / rate from now.
local wait = math.ceil(-tokens * 1000 / rate)
redis.call('ZADD', KEYS[2], now + wait, holder)
redis.call('HINCRBY', KEYS[1], 'deferrals', 1)
return {0, wait}
