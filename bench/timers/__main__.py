"""``python -m bench.timers``: see bench/timers/run.py."""

from bench.timers.run import main

raise SystemExit(main())
