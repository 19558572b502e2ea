-- renew (Gate.renew_many): running, same owner and token -> running, lease extended.
-- KEYS: gate records. ARGV: lease_ms, owner1, token1, owner2, token2, ...
-- Returns {2|1|0, ...}: 1 if the caller still holds the lease (or the event is already done:
-- nothing was lost), 2 if it does and an operator asked to cancel it (workers/cancel/).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local ok, rec = pcall(redis.call, 'HMGET', key, 'state', 'owner', 'token', 'cancel')
  local held = 0
  if not ok then
    held = 0  -- not a hash (WRONGTYPE): that lease is lost, the others are renewed
  elseif rec[1] == 'done' then
    held = 1
  elseif rec[1] == 'running' and rec[2] == ARGV[2 * i] and rec[3] == ARGV[2 * i + 1] then
    redis.call('HSET', key, 'lease_until', now + tonumber(ARGV[1]))
    held = rec[4] and 2 or 1
  end
  out[#out + 1] = held
end
return out
