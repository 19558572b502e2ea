-- wait (waits.store.Waits.wait): begin a run's wait, or say where it stands.
-- KEYS: the run's wait record, the stream's waiting set, its delayed set, the shapes hash of
-- the awaited type, the index set of the exact match, the stream's awaited types (all in the
-- stream's slot; a sleep passes the record for the last three).
-- ARGV: event hash, kind (event | sleep), type, match JSON, shape, delay_ms, at_ms (0: none;
-- for a sleep_until), the run's envelope JSON, group, the run's event type, step, keep_ms,
-- the note (what the operator is asked; '' for none).
-- A record of this step says where the wait stands: waiting (its wake-up set again, for an
-- early copy of the run), or over (answered, timed_out, cancelled). None, or one of an earlier
-- step: a new wait, indexed, with its wake-up at `until` in the delayed set (the timer XADDs
-- the run's envelope then). A wait found past its `until` ends timed_out here, atomically
-- with any answer (answer.lua), so exactly one of the two wins.
-- Returns {state, until, now, answer JSON or '', 1 if the wait began in this call}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = KEYS[1]
local keep = tonumber(ARGV[12])

local function finish(state)
  local f = redis.call('HMGET', rec, 'kind', 'index', 'shapes', 'shape', 'envelope')
  if f[1] == 'event' then
    redis.call('SREM', f[2], ARGV[1])
    if redis.call('HINCRBY', f[3], f[4], -1) <= 0 then redis.call('HDEL', f[3], f[4]) end
  end
  redis.call('ZREM', KEYS[2], ARGV[1])
  if f[5] then redis.call('ZREM', KEYS[3], f[5]) end
  redis.call('HSET', rec, 'state', state, 'ended_at', now)
  redis.call('PEXPIRE', rec, keep)
end

local cur = redis.call('HMGET', rec, 'state', 'step', 'until', 'answer', 'envelope')
if cur[1] and cur[2] == ARGV[11] then
  local until_ms = tonumber(cur[3]) or 0
  if cur[1] == 'waiting' then
    if until_ms > 0 and now >= until_ms then
      finish('timed_out')
      return {'timed_out', until_ms, now, ''}
    end
    if until_ms > 0 then redis.call('ZADD', KEYS[3], until_ms, cur[5]) end
    return {'waiting', until_ms, now, ''}
  end
  return {cur[1], until_ms, now, cur[4] or ''}
end
if cur[1] == 'waiting' then finish('abandoned') end

local until_ms = 0
if tonumber(ARGV[7]) > 0 then until_ms = tonumber(ARGV[7])
elseif tonumber(ARGV[6]) > 0 then until_ms = now + tonumber(ARGV[6]) end
if until_ms > 0 and until_ms <= now then return {'timed_out', until_ms, now, ''} end

redis.call('DEL', rec)
redis.call('HSET', rec, 'state', 'waiting', 'kind', ARGV[2], 'type', ARGV[3], 'match', ARGV[4],
           'shape', ARGV[5], 'since', now, 'until', until_ms, 'envelope', ARGV[8],
           'group', ARGV[9], 'event_type', ARGV[10], 'step', ARGV[11], 'index', KEYS[5],
           'shapes', KEYS[4], 'note', ARGV[13])
redis.call('ZADD', KEYS[2], now, ARGV[1])
if ARGV[2] == 'event' then
  redis.call('SADD', KEYS[5], ARGV[1])
  redis.call('HINCRBY', KEYS[4], ARGV[5], 1)
  redis.call('SADD', KEYS[6], ARGV[3])
end
if until_ms > 0 then redis.call('ZADD', KEYS[3], until_ms, ARGV[8]) end
return {'waiting', until_ms, now, '', 1}
