"""``make bench-webhooks`` (``python -m bench.webhooks``): signed webhooks into the stream."""
