-- preview_release (previews.preview_slot): free a user's preview slot.
-- Delete the slot only if it is still ours (it may have expired and been taken since).
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
