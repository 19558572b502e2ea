-- describe (view.positions): where each pending entry stands in its key's queue, for the
-- console's pending rows. KEYS: entries hash. ARGV: entry ids.
-- Returns per id {} (not keyed) or {queue key, rank, limit}.
local out = {}
for i = 1, #ARGV do
  local limit, queue = placed(KEYS[1], ARGV[i])
  local rank = limit and redis.call('ZRANK', queue, pad(ARGV[i]))
  if rank then out[i] = {queue, rank, limit} else out[i] = {} end
end
return out
