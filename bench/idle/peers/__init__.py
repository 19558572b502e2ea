"""Each peer's smallest worker: one no-op task on the bench's Valkey (``REDIS_URL``), every
other setting its library's default, started idle by its own command line (bench.idle)."""
