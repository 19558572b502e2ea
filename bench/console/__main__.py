"""``python -m bench.console``: see bench/console/run.py."""

from bench.console.run import main

raise SystemExit(main())
