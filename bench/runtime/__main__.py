"""``python -m bench.runtime``: see bench/runtime/run.py."""

from bench.runtime.run import main

raise SystemExit(main())
