"""``python -m bench.outbox``: see bench/outbox/run.py."""

from bench.outbox.run import main

raise SystemExit(main())
