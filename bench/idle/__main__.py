"""``python -m bench.idle``: see bench/idle/run.py."""

from bench.idle.run import main

raise SystemExit(main())
