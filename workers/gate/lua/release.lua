-- release (Gate.queue_release): running, same owner and token -> released, token kept.
-- KEYS: gate record. ARGV: owner, token. 1 if released, 0 if the caller no longer held it.
-- Lets a retry start at once instead of waiting out the lease.
local rec = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token')
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] or rec[3] ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'released', 'lease_until', 0)
return 1
