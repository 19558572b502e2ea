-- oldest_pending (sample.collect): a group's oldest pending entry.
-- The oldest pending entry (by id) and when it is due if it waits on purpose: XPENDING and
-- ZSCORE in one call, so the sample keeps its three round trips. KEYS: stream, waits.
local p = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1)
if #p == 0 then return {} end
return {p[1][1], p[1][3], redis.call('ZSCORE', KEYS[2], p[1][1])}
