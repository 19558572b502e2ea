"""``make bench-runtime`` (``python -m bench.runtime``): durable steps and rate budgets."""
