"""Redis: the connection, the embedded Valkey, stream I/O, dead letters, counters and
heartbeats, consumer-group membership, the worker process's one pub/sub subscription
(``listener``: the engine's features register a handler per channel), the one O(1) sample
of everything and the recorded history behind the console's charts."""
