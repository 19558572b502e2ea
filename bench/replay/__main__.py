"""``python -m bench.replay``: see bench/replay/run.py."""

from bench.replay.run import main

raise SystemExit(main())
