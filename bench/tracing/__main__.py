"""``python -m bench.tracing``: see bench/tracing/run.py."""

from bench.tracing.run import main

raise SystemExit(main())
