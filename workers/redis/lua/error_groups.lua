-- error_groups: helpers the scripts that write or remove dead letters start with
-- (workers/redis/deadletter.py ERROR_GROUPS is prepended to them). One error group per
-- fingerprint and stream: a hash field of the index (KEYS given by the caller) holds the
-- group's record as JSON, and "<index>:<fingerprint>" its dead-letter ids, scored by when
-- each was written (ms), each id's sequence padded to 20 digits so that letters of one
-- millisecond sort in order too (``1-9`` before ``1-11``). The record: n (letters in the group now, the members' count),
-- seen (letters ever added), first and last (ms, as text), kind, message, frame, error
-- (a sample's last line) and sample (its dead id), types and groups (letters seen by event
-- type and by consumer group).

local function error_member(dead_id)
  local ms, seq = string.match(dead_id, '^(%d+)-(%d+)$')
  return ms .. '-' .. string.rep('0', 20 - #seq) .. seq
end

local function error_unpadded(member)
  local ms, seq = string.match(member, '^(%d+)-(%d+)$')
  return ms .. '-' .. (string.gsub(seq, '^0+(%d)', '%1'))
end

local function error_group_add(index, fp, dead_id, meta, event_type, group)
  local ms = string.match(dead_id, '^(%d+)')
  local members = index .. ':' .. fp
  if redis.call('ZADD', members, ms, error_member(dead_id)) == 0 then return 0 end
  local raw = redis.call('HGET', index, fp)
  local rec
  if raw then
    rec = cjson.decode(raw)
  else
    rec = {seen = 0, first = ms, last = '0', types = {}, groups = {}}
  end
  local m = cjson.decode(meta)
  rec.kind, rec.message, rec.frame = m.kind, m.message, m.frame
  rec.seen = rec.seen + 1
  rec.n = redis.call('ZCARD', members)
  if tonumber(ms) < tonumber(rec.first) then rec.first = ms end
  if tonumber(ms) >= tonumber(rec.last) then
    rec.last, rec.sample, rec.error = ms, dead_id, m.error
  end
  rec.types[event_type] = (rec.types[event_type] or 0) + 1
  rec.groups[group] = (rec.groups[group] or 0) + 1
  redis.call('HSET', index, fp, cjson.encode(rec))
  return 1
end

-- A letter leaves its group (redriven, purged): the record's count follows its members;
-- the group goes once it has none. A sample that left is replaced by the newest member.
local function error_group_drop(index, fp, dead_id)
  if not fp or fp == '' then return 0 end
  local members = index .. ':' .. fp
  if redis.call('ZREM', members, error_member(dead_id)) == 0 then return 0 end
  local raw = redis.call('HGET', index, fp)
  if not raw then return 1 end
  local rec = cjson.decode(raw)
  rec.n = redis.call('ZCARD', members)
  if rec.n == 0 then
    redis.call('HDEL', index, fp)
    return 1
  end
  if rec.sample == dead_id then
    rec.sample = error_unpadded(redis.call('ZRANGE', members, -1, -1)[1])
  end
  redis.call('HSET', index, fp, cjson.encode(rec))
  return 1
end

-- The fingerprint of a letter about to be removed: its own field, else the one the
-- backfill wrote down for a letter from before fingerprints (then forgotten).
local function error_fingerprint_of(fields, backfilled, dead_id)
  for j = 1, #fields, 2 do
    if fields[j] == 'fingerprint' then return fields[j + 1] end
  end
  local fp = redis.call('HGET', backfilled, dead_id)
  if fp then redis.call('HDEL', backfilled, dead_id) end
  return fp
end
