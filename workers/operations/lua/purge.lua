-- purge (redrive.purge): delete dead letters, each taken out of its error group too
-- (error_groups.lua, prepended).
-- KEYS: dead stream, error groups index, backfilled fingerprints. ARGV: ids... 1 per id
-- deleted, 0 if it was not there.
local out = {}
for i = 1, #ARGV do
  local letter = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])
  out[i] = 0
  if #letter == 1 then
    out[i] = redis.call('XDEL', KEYS[1], ARGV[i])
    -- In pcall: a group that cannot be written never stops a purge.
    pcall(function()
      error_group_drop(KEYS[2], error_fingerprint_of(letter[1][2], KEYS[3], ARGV[i]), ARGV[i])
    end)
  end
end
return out
