"""``python -m bench.waits``: see bench/waits/run.py."""

from bench.waits.run import main

raise SystemExit(main())
