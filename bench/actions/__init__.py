"""``make bench-actions`` (``python -m bench.actions``): bulk operator actions at 100,000
entries, and what they cost a running worker."""
