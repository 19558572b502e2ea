-- error_drop (error_groups.drop_gone): ids of one group whose letters are gone by other
-- means than a redrive or purge (an XDEL by hand, a deleted dead stream) leave the group,
-- so its count stops counting them. KEYS: error groups index. ARGV: fingerprint, dead ids.
-- Returns how many left.
local dropped = 0
for i = 2, #ARGV do
  dropped = dropped + error_group_drop(KEYS[1], ARGV[1], ARGV[i])
end
return dropped
