"""``make bench`` (``python -m bench.engine``): runworker's throughput, pickup latency and
memory against baselines, measured in one run; writes docs/benchmarks.md as a whole."""
