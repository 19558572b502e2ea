-- count (replay.counting.count_range): how many entries of a range a replay takes, over one
-- stretch of at most ARGV[3] entries; the caller calls again after the id it returns, so no
-- call holds the server for long (20,000 entries: about 50 ms).
-- KEYS: the stream. ARGV: where to start (an id, "(" .. id for just after it, or "-"),
-- where to end (an id or "+"), the most entries to read, the event type, the subject (""
-- any), "1" when the type and subject are plain text, then the type and the subject as an
-- encoder that escapes "/" writes them ("\/").
-- An entry is taken when it is an event as published, not a copy meant for one group
-- (``for``: a redrive, an answered wait, an earlier replay), and its type (and subject)
-- match: what the job copies (workers/replay/copying.py ``takes`` says the same in Python).
-- Plain text lets most entries be decided without decoding them (cjson is most of the
-- cost): text that is in no spelling in the entry cannot match, and a key that is in it
-- once ("type" written once) is the envelope's own, its value right after it. Only an
-- entry that a search cannot decide is decoded.
-- Returns {entries read, entries taken, the last id read or "" when the range is done}.
local start, most = ARGV[1], tonumber(ARGV[3])
local want_type, want_subject, plain = ARGV[4], ARGV[5], ARGV[6] == '1'
local function escape(text) return (string.gsub(text, '%W', '%%%0')) end

-- Each of the type and the subject: its two spellings, its key quoted, and the patterns
-- of that key's value, made once per call, not once per entry.
local function wanted(key, text, escaped)
  return {texts = {text, escaped}, key = '"' .. key .. '"',
          values = {'^%s*:%s*"' .. escape(text) .. '"', '^%s*:%s*"' .. escape(escaped) .. '"'}}
end
local types, subjects = wanted('type', ARGV[4], ARGV[7]), wanted('subject', ARGV[5], ARGV[8])

local function found_in(event, want)
  return string.find(event, want.texts[1], 1, true) or string.find(event, want.texts[2], 1, true)
end

-- true or false when a search can tell whether the key holds the value; nil if not.
local function holds(event, want)
  local at = string.find(event, want.key, 1, true)
  if not at then return nil end
  local after = at + #want.key
  if string.find(event, want.key, after, true) then return nil end
  return (string.find(event, want.values[1], after) or string.find(event, want.values[2], after)) ~= nil
end

local function takes(event)
  if plain then
    if not found_in(event, types) then return false end
    if want_subject ~= '' and not found_in(event, subjects) then return false end
    local sure = holds(event, types)
    if sure == true and want_subject ~= '' then sure = holds(event, subjects) end
    if sure ~= nil then return sure end
  end
  local ok, obj = pcall(cjson.decode, event)
  return ok and type(obj) == 'table' and obj['type'] == want_type
    and (want_subject == '' or obj['subject'] == want_subject)
end

local read, taken, last = 0, 0, ''
while read < most do
  local asked = math.min(1000, most - read)
  local rows = redis.call('XRANGE', KEYS[1], start, ARGV[2], 'COUNT', asked)
  for i = 1, #rows do
    local fields, event, copy = rows[i][2], nil, false
    for j = 1, #fields, 2 do
      if fields[j] == 'event' then event = fields[j + 1] elseif fields[j] == 'for' then copy = true end
    end
    if event ~= nil and not copy and takes(event) then taken = taken + 1 end
  end
  read = read + #rows
  if #rows < asked then return {read, taken, ''} end
  last = rows[#rows][1]
  start = '(' .. last
end
return {read, taken, last}
