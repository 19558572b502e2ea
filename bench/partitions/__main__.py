"""``python -m bench.partitions``: see bench/partitions/run.py."""

from bench.partitions.run import main

raise SystemExit(main())
