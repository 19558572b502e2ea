-- acquire (Gate.acquire_many): absent, released or an expired running -> running, token + 1.
-- KEYS: gate records (one per owner), then hashes to read (Gate.acquire_reading).
-- ARGV: lease_ms, record_ttl_ms, owner1, owner2, ...
-- Returns {outcome1, token1, ..., then each read hash's field names (false: not a hash)};
-- outcome: acquired, takeover, busy, hit, or broken (the key is not a hash: nothing
-- written). Cancelled is a hit like done; so is an expired running record an operator asked
-- to cancel (its worker died): it becomes cancelled.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_ms, ttl_ms = tonumber(ARGV[1]), ARGV[2]
local out = {}
local records = #ARGV - 2
for i = 1, records do
  local key = KEYS[i]
  -- pcall: a key of another type (WRONGTYPE) is that event's trouble, not its batch's.
  local ok, rec = pcall(redis.call, 'HMGET', key, 'state', 'owner', 'token', 'lease_until',
                         'cancel')
  if not ok then rec = {} end
  local token = tonumber(rec[3]) or 0
  local outcome
  if not ok then
    outcome = 'broken'
  elseif rec[1] == 'done' or rec[1] == 'cancelled' then
    outcome = 'hit'
  elseif rec[1] == 'running' and (tonumber(rec[4]) or 0) > now then
    outcome = 'busy'
  elseif rec[1] == 'running' and rec[5] then
    outcome = 'hit'
    redis.call('HSET', key, 'state', 'cancelled', 'lease_until', 0)
  else
    outcome = rec[1] == 'running' and 'takeover' or 'acquired'
    token = token + 1
    redis.call('HSET', key, 'state', 'running', 'owner', ARGV[i + 2], 'token', token,
               'lease_until', now + lease_ms)
    redis.call('PEXPIRE', key, ttl_ms)
  end
  out[#out + 1] = outcome
  out[#out + 1] = token
end
-- Read here so that a caller's read of them costs no command of its own (the engine's
-- lookup of the waits a batch answers: workers/waits/).
for i = records + 1, #KEYS do
  local ok, fields = pcall(redis.call, 'HKEYS', KEYS[i])
  out[#out + 1] = ok and fields or false
end
return out
