-- claim_name (redis.consumer_names.claim_consumer_name): take a consumer name if no live
-- worker holds it. KEYS: the name's heartbeat. ARGV: the claiming pid, the claim's TTL (ms).
-- Any key there (a live worker's heartbeat, whatever its fields) means taken. Returns 1 if
-- claimed, 0 if taken.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'claimed_by_pid', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
