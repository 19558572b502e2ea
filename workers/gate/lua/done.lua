-- done (Gate.queue_done): any -> done, expiring after ARGV[1] seconds.
-- KEYS: gate records. ARGV: ttl_s. Unconditional: called only after the database accepted
-- the results.
for _, key in ipairs(KEYS) do
  redis.call('HSET', key, 'state', 'done')
  redis.call('EXPIRE', key, ARGV[1])
end
return #KEYS
