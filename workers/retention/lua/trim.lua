-- trim (retention/trimmer.py): trim one stream by age and length, never past an entry a group
-- still needs, in one call: check the stream's turn, find the bound, trim, record.
-- KEYS: the stream, its retention record (a hash). ARGV: retention ms (0: none), the length
-- cap (0: none), ms to the next turn (0: trim now, whoever's turn it is), '1' for a dry run,
-- who trims, how many entries the length check may read, the most entries one XTRIM removes.
-- Returns {status, trimmed, cut, max_len applied, bound, held_by, note}; a dry run's trimmed
-- counts the entries older than the cut, up to the read limit.
local stream, record = KEYS[1], KEYS[2]
local retention_ms, max_len = tonumber(ARGV[1]), tonumber(ARGV[2])
local every_ms, dry, by = tonumber(ARGV[3]), ARGV[4] == '1', ARGV[5]
local probe, limit = tonumber(ARGV[6]), ARGV[7]
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if every_ms > 0 and now_ms < tonumber(redis.call('HGET', record, 'next_ms') or '0') then
  return {'later'}
end
if redis.call('EXISTS', stream) == 0 then return {'missing'} end

-- Ids compare as two whole numbers, each maybe past what a Lua number holds exactly.
local function less_num(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
local function less(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if am ~= bm then return less_num(am, bm) end
  return less_num(as, bs)
end

-- The bound: the lowest id any group still needs, its oldest pending entry or, with none
-- pending, its last delivered one (kept: a group created at 0 that read nothing needs all).
local bound, held_by = nil, ''
for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
  local f = {}
  for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
  local id = f['last-delivered-id']
  if tonumber(f['pending']) > 0 then
    local p = redis.call('XPENDING', stream, f['name'])
    if p[2] then id = p[2] end
  end
  if bound == nil or less(id, bound) then bound, held_by = id, f['name'] end
end
if bound == nil then return {'no-group'} end

local cut, cap, limited, note = nil, 0, '', ''
if retention_ms > 0 and now_ms > retention_ms then
  cut = string.format('%d-0', now_ms - retention_ms)
  if less(bound, cut) then
    -- Held back only if some entry is older than the retention (a group at 0-0 that read
    -- nothing holds nothing back while every entry is recent).
    local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
    if first and less(first[1], cut) then limited = held_by end
    cut = bound
  end
end
local length = redis.call('XLEN', stream)
if max_len > 0 and length > max_len then
  -- MAXLEN keeps the newest max_len entries: safe when every entry from the bound on is
  -- among them. Reading more than `probe` entries to know is not worth it: then say so.
  local n = math.min(max_len, probe)
  local tail = #redis.call('XRANGE', stream, bound, '+', 'COUNT', n + 1)
  if tail <= n then
    cap = max_len
  elseif n == max_len then
    if cut == nil or less(cut, bound) then cut = bound end
    limited = held_by
  else
    note = 'length cap not applied: groups still need more than ' .. probe .. ' entries'
  end
end

local trimmed = 0
if dry then
  if cut and cut ~= '0-0' then
    trimmed = #redis.call('XRANGE', stream, '-', '(' .. cut, 'COUNT', probe)
  end
  if cap > 0 then trimmed = math.max(trimmed, length - cap) end
else
  if cut then trimmed = redis.call('XTRIM', stream, 'MINID', '~', cut, 'LIMIT', limit) end
  if cap > 0 then
    trimmed = trimmed + redis.call('XTRIM', stream, 'MAXLEN', '~', cap, 'LIMIT', limit)
  end
  redis.call('HSET', record, 'at_ms', now_ms, 'by', by, 'retention_ms', retention_ms,
    'max_len', max_len, 'trimmed', trimmed, 'cut', cut or '', 'held_by', limited, 'note', note)
  redis.call('HINCRBY', record, 'trimmed_total', trimmed)
  if every_ms > 0 then redis.call('HSET', record, 'next_ms', now_ms + every_ms) end
end
return {'trimmed', trimmed, cut or '', cap, bound, limited, note}
