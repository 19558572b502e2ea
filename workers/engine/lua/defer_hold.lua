-- defer_hold (defer.Deferrals.hold): keep long waits from being reclaimed.
-- For each (id, idle ms) pair: if still pending for this consumer, set its idle time (JUSTID
-- leaves the delivery count alone). Returns the ids that are no longer this consumer's: an
-- operator or another worker moved them, or they were acked; they are not taken back.
local gone = {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)[1]
  if row and row[2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'IDLE', ARGV[i + 1], 'JUSTID')
  else
    table.insert(gone, id)
  end
end
return gone
