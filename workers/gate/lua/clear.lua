-- clear (clear_gate, force re-run): done, cancelled, released, an expired running or an
-- operator's hold -> released, keeping the fencing token so tokens only grow; a cancel
-- request is forgotten.
-- KEYS: gate record. ARGV: holder prefix (owners written by dead-lettering).
-- 1 if it was cleared, 0 if there is none, -1 if an agent holds a live lease on it now.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = redis.call('HMGET', KEYS[1], 'state', 'owner', 'lease_until')
if not rec[1] then return 0 end
local held = rec[2] and string.sub(rec[2], 1, #ARGV[1]) == ARGV[1]
if rec[1] == 'running' and (tonumber(rec[3]) or 0) > now and not held then return -1 end
redis.call('HSET', KEYS[1], 'state', 'released', 'lease_until', 0)
redis.call('HDEL', KEYS[1], 'cancel', 'cancel_reason')
return 1
