-- release (Flow.settled): entries acked or dead-lettered leave their keys' queues. Where
-- that lets the next entry of a key run, it is handed to `consumer`: claimed without
-- counting a delivery, and returned (flat: append_entry) to run next. With no consumer
-- (a stopping worker, an operator) it is made reclaimable at once instead. An id already
-- gone from its queue was dropped by may_run, which handed its successor on already.
-- KEYS: stream, entries hash, queues index. ARGV: group, consumer or '', claim idle ms, ids.
local stream, entries, index = KEYS[1], KEYS[2], KEYS[3]
local group, consumer, claim_idle = ARGV[1], ARGV[2], ARGV[3]
local out = {}

-- The entry that may now run, at `limit - 1` once the released one is gone; those found no
-- longer pending are dropped and the next one tried. `first` is that entry if known.
-- True if it dropped any.
local function hand_next(queue, limit, first)
  local member, dropped = first, false
  while true do
    member = member or redis.call('ZRANGE', queue, limit - 1, limit - 1)[1]
    if not member then return dropped end
    local id = unpad(member)
    if hand(stream, group, consumer, claim_idle, id, out) then return dropped end
    redis.call('ZREM', queue, member)
    redis.call('HDEL', entries, id)
    member, dropped = nil, true
  end
end

-- Up to this limit, one ZRANGE of the queue's first limit + 1 members tells at once whether
-- the entry was among those that may run, which entry comes next, and whether the queue is
-- now empty (ZRANK, a second ZRANGE and ZCARD took three calls). True if it is empty.
local FRONT_MAX = 16
local function release_front(queue, member, limit)
  local front = redis.call('ZRANGE', queue, 0, limit)
  local rank
  for i = 1, #front do
    if front[i] == member then rank = i - 1; break end
  end
  if rank or #front > limit then redis.call('ZREM', queue, member) end
  -- Another entry may run only if one was beyond the first `limit`.
  if rank and rank < limit and #front > limit and hand_next(queue, limit, front[limit + 1]) then
    return redis.call('ZCARD', queue) == 0
  end
  -- The front was the whole queue, and it held this entry at most.
  return #front == 0 or (rank ~= nil and #front == 1)
end

local function release_ranked(queue, member, limit)
  local rank = redis.call('ZRANK', queue, member)
  if rank then
    redis.call('ZREM', queue, member)
    if rank < limit then hand_next(queue, limit) end
  end
  return redis.call('ZCARD', queue) == 0
end

local function release(id, at)
  local limit, queue = split_placed(at)
  if not limit then return end
  local member = pad(id)
  local empty
  if limit <= FRONT_MAX then
    empty = release_front(queue, member, limit)
  else
    empty = release_ranked(queue, member, limit)
  end
  if empty then redis.call('ZREM', index, queue) end
end

-- One HMGET and one HDEL of the entries hash for a thousand entries, not one each.
for i = 4, #ARGV, 1000 do
  local last = math.min(i + 999, #ARGV)
  local at = redis.call('HMGET', entries, unpack(ARGV, i, last))
  for j = i, last do release(ARGV[j], at[j - i + 1]) end
end
for i = 4, #ARGV, 1000 do
  redis.call('HDEL', entries, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
return out
