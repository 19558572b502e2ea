-- lease_hold (recorder.Lease): take or renew a lease.
-- Take the lease if it is free, renew it if it is ours: 1 if we hold it now, else 0.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
