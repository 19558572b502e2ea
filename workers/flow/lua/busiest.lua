-- busiest (view.key_table): the group's most recently active keys, for the console. Bounded
-- by `count`, never a scan. KEYS: index, entries hash. ARGV: count.
-- Returns {keys in the index, rows}; each row {queue key, entries, limit}.
local rows = {}
for _, queue in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local head = redis.call('ZRANGE', queue, 0, 0)[1]
  local limit = head and placed(KEYS[2], unpad(head))
  if limit then rows[#rows + 1] = {queue, redis.call('ZCARD', queue), limit} end
end
return {redis.call('ZCARD', KEYS[1]), rows}
