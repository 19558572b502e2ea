-- lease_release (recorder.Lease): give a lease up.
-- KEYS: lease. ARGV: holder. Deleted only if still ours (it may have expired and been
-- taken since): 1 if deleted, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
