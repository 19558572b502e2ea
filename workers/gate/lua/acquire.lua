-- acquire (Gate.acquire_many): absent, released or an expired running -> running, token + 1.
-- KEYS: gate records. ARGV: lease_ms, record_ttl_ms, owner1, owner2, ...
-- Returns {outcome1, token1, ...}; outcome: acquired, takeover, busy or hit.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_ms, ttl_ms = tonumber(ARGV[1]), ARGV[2]
local out = {}
for i, key in ipairs(KEYS) do
  local rec = redis.call('HMGET', key, 'state', 'owner', 'token', 'lease_until')
  local token = tonumber(rec[3]) or 0
  local outcome
  if rec[1] == 'done' then
    outcome = 'hit'
  elseif rec[1] == 'running' and (tonumber(rec[4]) or 0) > now then
    outcome = 'busy'
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
return out
