"""Getting events into the stream: ``publish``, the transactional outbox and its relay, and
webhook intake (``webhooks/``)."""
