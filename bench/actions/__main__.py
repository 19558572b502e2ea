"""``python -m bench.actions``: see bench/actions/run.py."""

from bench.actions.run import main

raise SystemExit(main())
