"""``python -m bench.webhooks``: see bench/webhooks/run.py."""

from bench.webhooks.run import main

raise SystemExit(main())
