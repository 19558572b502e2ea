-- read_own (fanout.reader.OwnReader.read): a named agent's group reads new entries and lets
-- by, here in the server, those that are not its own, so its worker never receives them:
-- an entry meant for another group (``for``), one with no event, or an event of another
-- type (what does not parse is the home group's to dead-letter). An entry meant for this
-- group is its own; so is an event of its type.
-- KEYS: the stream. ARGV: group, consumer, count, the agent's event type, that type as an
-- encoder that escapes "/" writes it ("\/"); "1" when the type is plain text (no quote,
-- backslash or control character), so an event whose text holds it in no spelling is
-- another type's without decoding it (cjson is most of the cost).
-- Returns {the entries kept, flat (id, how many field names and values, those), how many
-- were read, the stream's newest id when nothing was read (block after it) else ""}.
local group = ARGV[1]
local reply = redis.call('XREADGROUP', 'GROUP', group, ARGV[2], 'COUNT', ARGV[3],
                         'STREAMS', KEYS[1], '>')
if not reply then
  local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
  return {{}, 0, newest[1] and newest[1][1] or '0-0'}
end
local want, escaped, plain = ARGV[4], ARGV[5], ARGV[6] == '1'
local rows = reply[1][2]
local kept, passed = {}, {}
for i = 1, #rows do
  local id, fields = rows[i][1], rows[i][2]
  local target, event = nil, nil
  for j = 1, #fields, 2 do
    if fields[j] == 'for' then target = fields[j + 1]
    elseif fields[j] == 'event' then event = fields[j + 1] end
  end
  local mine
  if target then
    mine = target == group
  elseif not event then
    mine = false
  elseif plain and not (string.find(event, want, 1, true) or string.find(event, escaped, 1, true)) then
    mine = false
  else
    local ok, obj = pcall(cjson.decode, event)
    mine = ok and type(obj) == 'table' and obj['type'] == want
  end
  if mine then
    kept[#kept + 1] = id
    kept[#kept + 1] = #fields
    for j = 1, #fields do kept[#kept + 1] = fields[j] end
  else
    passed[#passed + 1] = id
  end
end
if #passed > 0 then redis.call('XACK', KEYS[1], group, unpack(passed)) end
return {kept, #rows, ''}
