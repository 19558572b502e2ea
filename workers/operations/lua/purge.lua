-- purge (redrive.purge): delete dead letters.
-- KEYS: dead stream. ARGV: ids... 1 per id deleted, 0 if it was not there.
local out = {}
for i = 1, #ARGV do out[i] = redis.call('XDEL', KEYS[1], ARGV[i]) end
return out
