"""``python -m bench.errors``: see bench/errors/run.py."""

from bench.errors.run import main

raise SystemExit(main())
