"""``python -m bench.errors``: the Errors page over 100,000 dead letters (issue 32)."""
