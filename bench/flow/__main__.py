"""``python -m bench.flow``: see bench/flow/run.py."""

from bench.flow.run import main

raise SystemExit(main())
