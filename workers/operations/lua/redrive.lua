-- redrive (redrive.redrive): dead letters back on the stream, once each.
-- KEYS: stream, dead stream, error groups index, backfilled fingerprints. ARGV: by, dead
-- ids... Per dead letter still there: XADD the original event to the stream with retry_of,
-- XDEL the letter and take it out of its error group (error_groups.lua, prepended); its new
-- id, or "" if the letter is gone (another redrive or a purge got there first).
local out = {}
for i = 2, #ARGV do
  local letter = redis.call('XRANGE', KEYS[2], ARGV[i], ARGV[i])
  local new_id = ''
  if #letter == 1 then
    local event, fields = '', letter[1][2]
    for j = 1, #fields, 2 do
      if fields[j] == 'event' then event = fields[j + 1] end
    end
    new_id = redis.call('XADD', KEYS[1], '*', 'event', event, 'retry_of', ARGV[i], 'by', ARGV[1])
    redis.call('XDEL', KEYS[2], ARGV[i])
    -- In pcall: a group that cannot be written never stops a redrive.
    pcall(function()
      error_group_drop(KEYS[3], error_fingerprint_of(fields, KEYS[4], ARGV[i]), ARGV[i])
    end)
  end
  out[#out + 1] = new_id
end
return out
