-- retry_now (actions.retry_now): make pending entries reclaimable now.
-- KEYS: stream. ARGV: group, idle_ms, ids... 1 per id still pending: its idle time is now
-- idle_ms, its owner and delivery count unchanged (XCLAIM to the owner itself, JUSTID).
local out = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  local ok = 0
  if #p == 1 then
    local claimed = redis.call('XCLAIM', KEYS[1], ARGV[1], p[1][2], 0, ARGV[i],
                               'IDLE', ARGV[2], 'JUSTID')
    if #claimed == 1 then ok = 1 end  -- Redis >= 7 drops a deleted entry instead
  end
  out[#out + 1] = ok
end
return out
