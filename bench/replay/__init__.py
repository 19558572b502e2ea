"""``make bench-replay``: issue 31's replay targets (bench/replay/run.py)."""
