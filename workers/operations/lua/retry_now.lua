-- retry_now (actions.retry_now): make pending entries reclaimable now.
-- KEYS: stream, gate records... ARGV: group, idle_ms, owner prefix of an operator's hold,
-- then per entry: id, index of its gate record in KEYS after the first (0: it does not
-- decode, no record). One reply per entry:
--   1        still pending: its idle time is now idle_ms, its owner and delivery count
--            unchanged (XCLAIM to the owner itself, JUSTID)
--   0        not pending (acked, or never read), or its payload was deleted
--   <owner>  an agent holds the event's lease now (the gate record's owner,
--            "<consumer>/<entry id>"): left alone, as a reclaim would only find it busy
--            and add a delivery
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local group, idle_ms, prefix = ARGV[1], ARGV[2], ARGV[3]
local out = {}
for i = 4, #ARGV, 2 do
  local id, g = ARGV[i], tonumber(ARGV[i + 1])
  local p = redis.call('XPENDING', KEYS[1], group, id, id, 1)
  local reply = 0
  if #p == 1 then
    local owner = false
    if g > 0 then
      local rec = redis.call('HMGET', KEYS[1 + g], 'state', 'owner', 'lease_until')
      local held = rec[2] and string.sub(rec[2], 1, #prefix) == prefix
      if rec[1] == 'running' and (tonumber(rec[3]) or 0) > now and not held then
        owner = rec[2]
      end
    end
    if owner then
      reply = owner
    else
      local claimed = redis.call('XCLAIM', KEYS[1], group, p[1][2], 0, id,
                                 'IDLE', idle_ms, 'JUSTID')
      if #claimed == 1 then reply = 1 end  -- Redis >= 7 drops a deleted entry instead
    end
  end
  out[#out + 1] = reply
end
return out
