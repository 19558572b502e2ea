-- cancelled (Gate.queue_cancelled): any -> cancelled, expiring after ARGV[1] seconds, like
-- done: every later copy of the event is a hit. Called only after the database recorded
-- the run as cancelled (workers/cancel/engine.py).
-- KEYS: gate records. ARGV: ttl_s.
for _, key in ipairs(KEYS) do
  redis.call('HSET', key, 'state', 'cancelled', 'lease_until', 0)
  redis.call('EXPIRE', key, ARGV[1])
end
return #KEYS
