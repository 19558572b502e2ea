-- check (Flow.screen): may these pending entries run, taken back by a reclaim or read again
-- after a restart? Each: '' (not keyed), '+' (may run) or the queue key it waits in. A
-- waiting entry's delivery count is put back (waiting is not a delivery): it runs when the
-- one ahead of it is released, whoever holds it meanwhile.
-- Returns {verdicts, handed}: entries handed to `consumer` because the heads ahead of them
-- were gone (may_run), flat (append_entry).
-- KEYS: stream, entries hash. ARGV: group, consumer, entry ids.
local stream, entries = KEYS[1], KEYS[2]
local group, consumer = ARGV[1], ARGV[2]
local out, handed = {}, {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local limit, queue = placed(entries, id)
  local verdict = ''
  if limit then
    local member = pad(id)
    -- A queue lost (deleted by hand) takes the entry back in its place.
    redis.call('ZADD', queue, 'NX', 0, member)
    if may_run(stream, group, entries, queue, member, limit, consumer, handed) then
      verdict = '+'
    else
      verdict = queue
      local row = pending_row(stream, group, id)
      if row then
        redis.call('XCLAIM', stream, group, consumer, 0, id,
                   'RETRYCOUNT', math.max(tonumber(row[4]) - 1, 1), 'JUSTID')
      end
    end
  end
  out[#out + 1] = verdict
end
return {out, handed}
