-- read (Flow.read): XREADGROUP for new entries, and each keyed event placed in its key's
-- queue in the same atomic call, so the queue's order is the order the group handed the
-- entries out (two workers' reads cannot register out of order).
-- KEYS: stream, entries hash, queues index.
-- ARGV: group, consumer, count, queue key head, event field, now (ms), then a triple per
-- keyed event type: type, key path ('subject', 'data.a.b', or '' for the whole agent), limit.
-- Returns {entries, read, last}: the entries that may run, flat (append_entry; those that
-- wait are left out: they are read again when handed on), how many were read, and with
-- nothing new `last`, the stream's last id, for an XREAD BLOCK that wakes when anything is
-- added after it ('' when anything was read).
local stream, entries, index = KEYS[1], KEYS[2], KEYS[3]
local group, consumer, head, field, now = ARGV[1], ARGV[2], ARGV[4], ARGV[5], ARGV[6]
local specs, hashed, active = {}, {}, {}
-- Each type's key path split once, not once per event.
for i = 7, #ARGV, 3 do
  local parts = {}
  for part in string.gmatch(ARGV[i + 1], '[^.]+') do parts[#parts + 1] = part end
  specs[ARGV[i]] = {parts, tonumber(ARGV[i + 2])}
end

local function value_at(event, parts)
  if #parts == 0 then return '' end
  local node = event
  for i = 1, #parts do
    if type(node) ~= 'table' then return '' end
    node = node[parts[i]]
  end
  local kind = type(node)
  if kind == 'string' then return node end
  -- %.17g: every double exactly (Lua's tostring keeps 14 digits: ids would collide).
  if kind == 'number' then return string.format('%.17g', node) end
  if kind == 'boolean' then return tostring(node) end
  if kind == 'table' then return cjson.encode(node) end
  return ''
end

-- Whether the entry may run: not keyed, or among the first `limit` of its key.
local function place(id, flat)
  local raw
  for i = 1, #flat, 2 do
    if flat[i] == field then raw = flat[i + 1]; break end
  end
  if not raw then return true end
  local ok, event = pcall(cjson.decode, raw)
  if not ok or type(event) ~= 'table' or type(event.type) ~= 'string' then return true end
  local spec = specs[event.type]
  if not spec then return true end
  local queue = head .. event.type .. ':' .. value_at(event, spec[1])
  redis.call('ZADD', queue, 0, pad(id))
  -- The entries hash and the index are written once for the whole batch, below.
  hashed[#hashed + 1] = id
  hashed[#hashed + 1] = spec[2] .. '\t' .. queue
  -- Ids only grow, so a new entry is last in its queue: its rank is the queue's size less
  -- one. No heal here (a release is on its way for every head acked by the engine;
  -- ``check`` heals the rest, on reclaim).
  local rank = redis.call('ZCARD', queue) - 1
  if rank == 0 then  -- the key became active
    active[#active + 1] = now
    active[#active + 1] = queue
  end
  return rank < spec[2]
end

local reply = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', ARGV[3],
                         'STREAMS', stream, '>')
local out, read = {}, 0
if reply then
  for _, entry in ipairs(reply[1][2]) do
    local flat = entry[2] or {}
    read = read + 1
    if place(entry[1], flat) then append_entry(out, entry[1], 1, flat) end
  end
end
for i = 1, #hashed, 1000 do
  redis.call('HSET', entries, unpack(hashed, i, math.min(i + 999, #hashed)))
end
for i = 1, #active, 1000 do
  redis.call('ZADD', index, unpack(active, i, math.min(i + 999, #active)))
end
if read > 0 then return {out, read, ''} end
local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]
return {out, 0, last and last[1] or '0-0'}
