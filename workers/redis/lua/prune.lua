-- prune (consumers.prune, housekeeping): remove one ghost consumer.
-- KEYS: stream, stats hash. ARGV: group, consumer, min_idle_ms, stats field.
-- 1 if the consumer was deleted: it exists, has nothing pending and has been idle for at
-- least min_idle_ms at this very moment (an entry claimed to it meanwhile keeps it).
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local name, pending, idle
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1]
    elseif c[i] == 'pending' then pending = c[i + 1]
    elseif c[i] == 'idle' then idle = c[i + 1] end
  end
  if name == ARGV[2] then
    if pending ~= 0 or idle < tonumber(ARGV[3]) then return 0 end
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
    redis.call('HINCRBY', KEYS[2], ARGV[4], 1)
    return 1
  end
end
return 0
