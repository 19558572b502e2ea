"""The console process's bulk-job runner: one thread, started by the first request.

Jobs live in the database with a lease, so a restarted console (or another one) resumes
them after their cursor; ``manage.py jobs --run ID`` runs one in the foreground instead.
"""

from __future__ import annotations

import os
import socket
import threading

from django.conf import settings

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
        from console.runtime import keys
        from workers.jobs import JobRunner
        from workers.runtime import redis_client

        owner = f"console:{socket.gethostname()}:{os.getpid()}"
        runner = JobRunner(redis_client(), keys(), owner)
        _thread = threading.Thread(
            target=runner.run_forever, args=(_stop,), name="streamdesk-jobs", daemon=True
        )
        _thread.start()
