-- answer (operations/answer.py): publish an operator's answer to a waiting run, only while
-- the run still waits for an event: the check and the XADD are one step, so an answer is
-- never published to a wait that ended (answered, timed out, cancelled) or to a sleep.
-- KEYS: the run's wait record, the stream it waits on (the same cluster slot).
-- ARGV: the answer's envelope JSON, the entry's field name.
-- Returns {'ok', entry id}, or {state ('gone' when no record), kind}.
local f = redis.call('HMGET', KEYS[1], 'state', 'kind')
if f[1] ~= 'waiting' or f[2] ~= 'event' then return {f[1] or 'gone', f[2] or ''} end
return {'ok', redis.call('XADD', KEYS[2], '*', ARGV[2], ARGV[1])}
