"""The console process's bulk-job runner: one thread, started by the first request.

Jobs live in the database with a lease, so a restarted console (or another one) resumes
them after their cursor; ``manage.py jobs --run ID`` runs one in the foreground instead.
"""

from __future__ import annotations

import logging
import os
import socket
import threading

from django.conf import settings

log = logging.getLogger(__name__)
_lock = threading.Lock()
_thread: threading.Thread | None = None
_stop = threading.Event()


def ensure_job_runner() -> None:
    global _thread
    if not settings.STREAMDESK_JOB_RUNNER:
        return
    with _lock:
        if _thread is not None and _thread.is_alive():
            return
        owner = f"console:{socket.gethostname()}:{os.getpid()}"
        _thread = threading.Thread(
            target=_run_jobs, args=(owner,), name="streamdesk-jobs", daemon=True
        )
        _thread.start()


def _run_jobs(owner: str) -> None:
    """Connects in the thread, retrying: Redis down at start-up must neither fail the
    request that starts the runner (a 500) nor leave the console without one."""
    from console.runtime import keys, redis_client
    from workers.core.errors import RedisUnavailable
    from workers.operations.jobs import JobRunner
    from workers.replay import JOB_KINDS

    delay_s = 0.1
    while not _stop.is_set():
        try:
            client = redis_client()
        except RedisUnavailable:
            _stop.wait(delay_s)
            delay_s = min(delay_s * 2, 5.0)
            continue
        JobRunner(client, keys(), owner, kinds=JOB_KINDS).run_forever(_stop)
        return
