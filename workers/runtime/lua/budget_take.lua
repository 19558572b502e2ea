-- budget_take (ratelimit.Limiter.take): one token of a budget for a holder (an event hash).
-- KEYS: the bucket's hash (tokens, ts, taken, deferrals), its reservations (zset holder -> due ms).
-- ARGV: rate per second, burst, holder, stale ms, keyed (1 or 0). Returns {1, 0, expiry, now}
-- when let through, else {0, wait ms, expiry, now}: the holder is reserved the token due then,
-- and its rerun takes it. A keyed bucket's keys expire once it would be full again (an absent
-- bucket is a full one), at expiry (server ms); an unkeyed bucket's never do (expiry 0).
local rate, burst, holder, stale = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local keyed = ARGV[5] == '1'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function level()
  local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
  local tokens, ts = tonumber(b[1]) or burst, tonumber(b[2]) or now
  return math.min(burst, tokens + math.max(now - ts, 0) * rate / 1000)
end

local function reply(ok, wait, tokens)
  if not keyed then
    return {ok, wait, 0, now}
  end
  -- Every reservation is due by the time the level is back to 0, before it is full.
  local ttl = math.ceil((burst - tokens) * 1000 / rate) + 1000
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  return {ok, wait, now + ttl, now}
end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - stale)
local held = redis.call('ZSCORE', KEYS[2], holder)
if held then
  held = tonumber(held)
  if held <= now then
    redis.call('ZREM', KEYS[2], holder)
    redis.call('HINCRBY', KEYS[1], 'taken', 1)
    return reply(1, 0, level())
  end
  return reply(0, held - now, level())
end
local tokens = level() - 1
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now)
if tokens >= 0 then
  redis.call('HINCRBY', KEYS[1], 'taken', 1)
  return reply(1, 0, tokens)
end
-- Reserved: the bucket refills to zero, paying for this token, -tokens / rate from now.
local wait = math.ceil(-tokens * 1000 / rate)
redis.call('ZADD', KEYS[2], now + wait, holder)
redis.call('HINCRBY', KEYS[1], 'deferrals', 1)
return reply(0, wait, tokens)
