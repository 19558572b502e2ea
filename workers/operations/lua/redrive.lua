-- redrive (redrive.redrive): dead letters back on the stream, once each.
-- KEYS: stream, dead stream, error groups index, backfilled fingerprints. ARGV: by, dead
-- ids... Per dead letter still there: XADD the original event to the stream with retry_of,
-- for the letter's group alone (``for``: another agent's run of the event is not redriven
-- with it) unless no agent had it (an unknown type, an entry that did not parse), XDEL the letter and take it out of its error group (error_groups.lua, prepended); its new
-- id, or "" if the letter is gone (another redrive or a purge got there first).
local out = {}
for i = 2, #ARGV do
  local letter = redis.call('XRANGE', KEYS[2], ARGV[i], ARGV[i])
  local new_id = ''
  if #letter == 1 then
    local event, group, reason, replay, fields = '', '', '', '', letter[1][2]
    for j = 1, #fields, 2 do
      if fields[j] == 'event' then event = fields[j + 1] end
      if fields[j] == 'group' then group = fields[j + 1] end
      if fields[j] == 'reason' then reason = fields[j + 1] end
      if fields[j] == 'replay' then replay = fields[j + 1] end
    end
    local entry = {'event', event, 'retry_of', ARGV[i], 'by', ARGV[1]}
    -- A forced replay's letter: the redriven copy is that replay's run again.
    if replay ~= '' then
      entry[#entry + 1] = 'replay'
      entry[#entry + 1] = replay
    end
    if group ~= '' and reason ~= 'unknown-type' and reason ~= 'decode-error' then
      entry[#entry + 1] = 'for'
      entry[#entry + 1] = group
    end
    new_id = redis.call('XADD', KEYS[1], '*', unpack(entry))
    redis.call('XDEL', KEYS[2], ARGV[i])
    -- In pcall: a group that cannot be written never stops a redrive.
    pcall(function()
      error_group_drop(KEYS[3], error_fingerprint_of(fields, KEYS[4], ARGV[i]), ARGV[i])
    end)
  end
  out[#out + 1] = new_id
end
return out
