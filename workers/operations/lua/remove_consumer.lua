-- remove_consumer (actions.remove_consumer): an operator removes a consumer.
-- KEYS: stream. ARGV: group, consumer. The consumer's pending count (-1: no such consumer);
-- it is deleted only when that count is 0, checked in the same call.
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local name, pending
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1] elseif c[i] == 'pending' then pending = c[i + 1] end
  end
  if name == ARGV[2] then
    if pending == 0 then redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2]) end
    return pending
  end
end
return -1
