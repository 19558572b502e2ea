-- error_backfill (deadletter.backfill_groups): letters written before fingerprints joined
-- their error groups. KEYS: dead stream, error groups index, backfilled fingerprints (a hash
-- dead id -> fingerprint: the letters themselves cannot take a new field). ARGV: per letter
-- dead id, fingerprint, meta (JSON), event type, consumer group. A letter gone meanwhile
-- (redriven, purged) is left out. Returns how many joined a group (0 for those already in).
local added = 0
for i = 1, #ARGV, 5 do
  local id = ARGV[i]
  if #redis.call('XRANGE', KEYS[1], id, id) == 1 then
    if error_group_add(KEYS[2], ARGV[i + 1], id, ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]) == 1 then
      redis.call('HSET', KEYS[3], id, ARGV[i + 1])
      added = added + 1
    end
  end
end
return added
