"""``make bench-outbox`` (``python -m bench.outbox``): the transactional outbox's relay."""
