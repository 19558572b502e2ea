-- defer_take_back (defer.Deferrals): rerun this worker's waiting entries when due.
-- For each id: if still pending for this consumer, reset its idle time and delivery count
-- and return its fields; a deleted entry returns an empty list (acked by the caller).
local out = {}
for i, id in ipairs(ARGV) do
  if i > 2 then
    local row = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)[1]
    if row and row[2] == ARGV[2] then
      local n = tonumber(row[4]) + 1
      redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'IDLE', 0, 'RETRYCOUNT', n, 'JUSTID')
      local entry = redis.call('XRANGE', KEYS[1], id, id)[1]
      table.insert(out, {id, n, entry and entry[2] or {}})
    end
  end
end
return out
