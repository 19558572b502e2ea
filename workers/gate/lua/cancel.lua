-- cancel (cancel_gate, an operator's cancel; workers/cancel/): what becomes of the event.
-- KEYS: gate record, stream, stats hash, and the stats hash of the run's group (its agent's
-- counters) if it has one. ARGV: by, reason, ttl_s, holder prefix, then (group, entry id)
-- pairs to acknowledge if the event is not running.
-- Returns {status, acked}; status:
--   done       the event already succeeded: nothing changed
--   cancelled  it was cancelled before: nothing changed
--   requested  an agent holds a live lease on it: the record says who asked (fields
--              cancel, cancel_reason); its worker cancels the agent and settles the run
--   none       no record and none of the entries was pending: nothing to cancel
--   stopped    not running: the pending entries given were acknowledged, the record is
--              cancelled (a record made here gets token 0), expiring after ttl_s
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, stream, stats = KEYS[1], KEYS[2], KEYS[3]
local by, reason, ttl_s, prefix = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local rec = redis.call('HMGET', key, 'state', 'owner', 'lease_until')
if rec[1] == 'done' then return {'done', 0} end
if rec[1] == 'cancelled' then return {'cancelled', 0} end
local held = rec[2] and string.sub(rec[2], 1, #prefix) == prefix
if rec[1] == 'running' and (tonumber(rec[3]) or 0) > now and not held then
  redis.call('HSET', key, 'cancel', by, 'cancel_reason', reason)
  return {'requested', 0}
end
local acked = 0
for i = 5, #ARGV, 2 do
  acked = acked + redis.call('XACK', stream, ARGV[i], ARGV[i + 1])
end
if not rec[1] and acked == 0 then return {'none', 0} end
redis.call('HSET', key, 'state', 'cancelled', 'lease_until', 0, 'cancel', by,
           'cancel_reason', reason)
if not rec[1] then redis.call('HSET', key, 'token', 0) end
redis.call('EXPIRE', key, ttl_s)
redis.call('HINCRBY', stats, 'cancelled', 1)
if KEYS[4] then redis.call('HINCRBY', KEYS[4], 'cancelled', 1) end
return {'stopped', acked}
