-- claim (actions.claim): move pending entries to another consumer.
-- KEYS: stream. ARGV: group, consumer, ids... The ids claimed (XCLAIM 0 JUSTID). XCLAIM
-- creates the consumer even when it claims nothing, so it runs only when at least one id is
-- pending with its entry still there: a claim that moves nothing creates no consumer.
local args = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
local live = false
for i = 3, #ARGV do
  if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1) == 1 then
    args[#args + 1] = ARGV[i]
    if not live and #redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i]) == 1 then live = true end
  end
end
if not live then return {} end
args[#args + 1] = 'JUSTID'
return redis.call(unpack(args))
