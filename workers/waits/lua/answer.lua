-- answer (waits.store.Waits.answer_batch): an event resumes the runs waiting for it.
-- KEYS: the stream's waiting set, its delayed set, the stream, then the index sets the event
-- could be in (one per match shape in use; all in the stream's slot).
-- ARGV: the event's JSON, the ms of its entry id (0: any), the wait records' key head
-- ("{<stream>}:wait:"), keep_ms, the event's entry id.
-- Each waiting run found, that began to wait no later than the event was published, is
-- answered and its envelope XADDed at once, exactly once: an answer taken is out of every
-- index, so a second copy of the event, or a second event, finds nothing.
-- Returns the event hashes of the runs it resumed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local published = tonumber(ARGV[2])
local resumed = {}
for i = 4, #KEYS do
  for _, hash in ipairs(redis.call('SMEMBERS', KEYS[i])) do
    local rec = ARGV[3] .. hash
    local f = redis.call('HMGET', rec, 'state', 'since', 'envelope', 'shapes', 'shape', 'group')
    if f[1] == 'waiting' and (published == 0 or tonumber(f[2]) <= published) then
      redis.call('SREM', KEYS[i], hash)
      if redis.call('HINCRBY', f[4], f[5], -1) <= 0 then redis.call('HDEL', f[4], f[5]) end
      redis.call('ZREM', KEYS[1], hash)
      redis.call('ZREM', KEYS[2], f[3])
      redis.call('HSET', rec, 'state', 'answered', 'answer', ARGV[1], 'answered_at', now,
                 'answer_entry', ARGV[5], 'ended_at', now)
      redis.call('PEXPIRE', rec, tonumber(ARGV[4]))
      -- For the waiting run's group alone: another agent's run of the event is not woken.
      if f[6] then
        redis.call('XADD', KEYS[3], '*', 'event', f[3], 'for', f[6])
      else
        redis.call('XADD', KEYS[3], '*', 'event', f[3])
      end
      resumed[#resumed + 1] = hash
    elseif f[1] ~= 'waiting' then
      -- A record gone (expired) or over: it has no business in the index.
      redis.call('SREM', KEYS[i], hash)
    end
  end
end
return resumed
