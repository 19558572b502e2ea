"""``make bench-console`` (``python -m bench.console``): the console at 1,000,000 entries."""
