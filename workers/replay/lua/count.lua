-- count (replay.counting.count_range): how many entries of a range a replay takes, over one
-- stretch of at most ARGV[3] entries; the caller calls again after the id it returns, so no
-- call holds the server for long (20,000 entries: about 50 ms).
-- KEYS: the stream. ARGV: where to start (an id, "(" .. id for just after it, or "-"),
-- where to end (an id or "+"), the most entries to read, the event type, the subject (""
-- any), "1" when the type and subject are plain text (no JSON escape can spell them): a raw
-- search for them then skips decoding the entries that cannot match.
-- An entry is taken when it is an event as published, not a copy meant for one group
-- (``for``: a redrive, an answered wait, an earlier replay), and its type (and subject)
-- match: what the job copies (workers/replay/copying.py ``takes`` says the same in Python).
-- Returns {entries read, entries taken, the last id read or "" when the range is done}.
local start, most = ARGV[1], tonumber(ARGV[3])
local want_type, want_subject, plain = ARGV[4], ARGV[5], ARGV[6] == '1'
local read, taken, last = 0, 0, ''
while read < most do
  local asked = math.min(1000, most - read)
  local rows = redis.call('XRANGE', KEYS[1], start, ARGV[2], 'COUNT', asked)
  for i = 1, #rows do
    local fields, event, copy = rows[i][2], nil, false
    for j = 1, #fields, 2 do
      if fields[j] == 'event' then event = fields[j + 1] elseif fields[j] == 'for' then copy = true end
    end
    local maybe = event ~= nil and not copy
    if maybe and plain then
      maybe = string.find(event, want_type, 1, true) ~= nil
        and (want_subject == '' or string.find(event, want_subject, 1, true) ~= nil)
    end
    if maybe then
      local ok, obj = pcall(cjson.decode, event)
      if ok and type(obj) == 'table' and obj['type'] == want_type
        and (want_subject == '' or obj['subject'] == want_subject) then
        taken = taken + 1
      end
    end
  end
  read = read + #rows
  if #rows < asked then return {read, taken, ''} end
  last = rows[#rows][1]
  start = '(' .. last
end
return {read, taken, last}
