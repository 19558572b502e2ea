-- dead_letter (dead_letter_chunk, for workers/operations/actions.py): pending entries to the dead
-- stream, each one's gate record held under the operator's name: absent, released, an
-- expired running or an earlier hold -> running, owner "<holder prefix><by>", lease hold_ms
-- (token kept; a new record gets token 0 and expires with the hold).
-- KEYS: stream, dead stream, stats hash, the group's stats hash (its agent's counters),
-- gate records... ARGV: group, reason, by, dead_at, hold_ms, owner prefix, then per entry:
-- id, index of its gate record in KEYS after the first four (0: the entry does not decode,
-- no record). One status per entry:
--   moved    XADD to the dead stream then XACK (in this order, like the engine)
--   gone     not pending in the group (acked, or never read)
--   deleted  pending but its payload was deleted: acked, nothing to keep
--   running  an agent holds the event's lease now: it will settle the entry itself
--   done     the event already ran: the entry is a duplicate and will be acked as a hit
-- A moved entry's gate record is held under the operator's name for hold_ms, so a worker
-- that read the entry before this call finds its event busy and does not start it.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stream, dead, stats, own = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group, reason, by, dead_at = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local hold_ms, prefix = tonumber(ARGV[5]), ARGV[6]
local out, moved, deleted = {}, 0, 0
for i = 7, #ARGV, 2 do
  local id, g = ARGV[i], tonumber(ARGV[i + 1])
  local status = 'moved'
  local p = redis.call('XPENDING', stream, group, id, id, 1)
  local entry = {}
  if #p == 0 then
    status = 'gone'
  else
    entry = redis.call('XRANGE', stream, id, id)
    if #entry == 0 then status = 'deleted' end
  end
  if status == 'moved' and g > 0 then
    local key = KEYS[4 + g]
    local rec = redis.call('HMGET', key, 'state', 'owner', 'lease_until')
    local held = rec[2] and string.sub(rec[2], 1, #prefix) == prefix
    if rec[1] == 'done' or rec[1] == 'cancelled' then
      status = 'done'
    elseif rec[1] == 'running' and (tonumber(rec[3]) or 0) > now and not held then
      status = 'running'
    else
      redis.call('HSET', key, 'state', 'running', 'owner', prefix .. by,
                 'lease_until', now + hold_ms)
      if not rec[1] then
        redis.call('HSET', key, 'token', 0)
        redis.call('PEXPIRE', key, hold_ms)
      end
    end
  end
  if status == 'moved' then
    local event, fields = '', entry[1][2]
    for j = 1, #fields, 2 do
      if fields[j] == 'event' then event = fields[j + 1] end
    end
    redis.call('XADD', dead, '*', 'event', event, 'stream', stream, 'group', group,
               'entry_id', id, 'deliveries', p[1][4], 'reason', reason, 'error', '',
               'dead_at', dead_at, 'by', by)
    moved = moved + 1
  end
  if status == 'moved' or status == 'deleted' then
    redis.call('XACK', stream, group, id)
  end
  if status == 'deleted' then deleted = deleted + 1 end
  out[#out + 1] = status
end
-- Counted for the stream and for the group, as the engine counts its own.
for _, counters in ipairs({stats, own}) do
  if moved > 0 then redis.call('HINCRBY', counters, 'dead_lettered', moved) end
  if deleted > 0 then redis.call('HINCRBY', counters, 'deleted', deleted) end
end
return out
