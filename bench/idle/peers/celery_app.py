"""``celery -A bench.idle.peers.celery_app worker``: a Redis broker, one no-op task."""

from __future__ import annotations

import os

from celery import Celery

app = Celery("bench_idle", broker=os.environ["REDIS_URL"])


@app.task
def noop() -> None:
    """Never sent: the worker stays idle."""
