-- Shared head of read, check and release (flow/scripts.py puts it before each).
-- A key's queue is a sorted set whose scores are all 0, so its order is its members'
-- byte order: each member is its entry id padded to fixed width, so that order is the
-- stream's (publish) order. The entries hash maps an entry id to "<limit>TAB<queue key>".
-- Plain finds and substrings, not captures and string.rep: these run several times per
-- event, and each string built costs (Lua interns every one).
local ZEROS = {}
for n = 0, 20 do ZEROS[n] = string.rep('0', n) end

local function pad(id)
  local dash = string.find(id, '-', 1, true)
  return ZEROS[21 - dash] .. string.sub(id, 1, dash) .. ZEROS[20 - #id + dash]
    .. string.sub(id, dash + 1)
end

-- A member is 20 digits, '-', 20 digits: each part from its first digit that is not a
-- leading zero (or its last, if all are).
local function unpad(member)
  local ms = math.min(string.find(member, '[^0]'), 20)
  return string.sub(member, ms, 21) .. string.sub(member, string.find(member, '[^0]', 22) or 41)
end

local function pending_row(stream, group, id)
  return redis.call('XPENDING', stream, group, id, id, 1)[1]
end

-- An entries-hash value ("<limit>TAB<queue key>", or false for none): limit, queue key.
local function split_placed(at)
  local tab = at and string.find(at, '\t', 1, true)
  if not tab then return nil end
  return tonumber(string.sub(at, 1, tab - 1)), string.sub(at, tab + 1)
end

local function placed(entries, id)
  return split_placed(redis.call('HGET', entries, id))
end

-- Entries are returned flat, one list for them all: id, deliveries, how many field names
-- and values follow, those. (Redis turns each table of a reply into a reply of its own,
-- after looking up seven names in it: two tables per entry cost more than their contents.)
local function append_entry(out, id, deliveries, fields)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3] = id, deliveries, #fields
  for i = 1, #fields do out[n + 3 + i] = fields[i] end
end

-- Hand a waiting entry that may now run to `consumer`: claimed without counting a delivery
-- (its count set back to what it was), appended to `out` (append_entry). With no consumer
-- (a stopping worker, an operator) it is made reclaimable at once instead. False if the
-- entry is no longer pending (the caller drops it and looks at the next).
local function hand(stream, group, consumer, claim_idle, id, out)
  local row = pending_row(stream, group, id)
  if not row then return false end
  if consumer == '' then
    redis.call('XCLAIM', stream, group, row[2], 0, id, 'IDLE', claim_idle, 'JUSTID')
  else
    local entry = redis.call('XCLAIM', stream, group, consumer, 0, id, 'RETRYCOUNT', row[4])[1]
    append_entry(out, id, row[4], entry and entry[2] or {})
  end
  return true
end

-- May the entry run now: is it among the first `limit` of its key? If not, those ahead of
-- it that are no longer pending are dropped first (acked or deleted by a path that did not
-- release them: an operator's XACK, an XDEL, a trim, or an ack whose release is still on
-- its way), so a lost release delays a key and never blocks it for good. Whoever drops a
-- head hands on the entries that thereby may run (to `consumer`, into `out`), as a release
-- does: the release that follows finds nothing left to do.
local function may_run(stream, group, entries, queue, member, limit, consumer, out)
  local rank = redis.call('ZRANK', queue, member)
  if not rank or rank < limit then return true end
  local dropped = 0
  for _, head in ipairs(redis.call('ZRANGE', queue, 0, limit - 1)) do
    local id = unpad(head)
    if not pending_row(stream, group, id) then
      redis.call('ZREM', queue, head)
      redis.call('HDEL', entries, id)
      dropped = dropped + 1
    end
  end
  if dropped == 0 then return false end
  for _, next_member in ipairs(redis.call('ZRANGE', queue, limit - dropped, limit - 1)) do
    if next_member ~= member then
      hand(stream, group, consumer, 0, unpad(next_member), out)
    end
  end
  return rank - dropped < limit
end
