"""Settings for the test suite: the project's own, in development and demo mode.

The suite exercises the demo agents, the example apps and the ``demo`` webhook source, and its
subprocesses (runworker, daphne, ``up``) copy this process's environment: so the variables go
into the environment, before ``console.settings`` reads them. A variable already set wins.
"""

from __future__ import annotations

import os

from tests.support.xdist import own_db

# Under pytest-xdist, this process's own db number, for it and every subprocess it starts;
# once: a subprocess (which inherits the xdist worker's name) may be given another URL.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if os.environ.get("STREAMDESK_TEST_DB_OF") != _worker:
    if os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = own_db(os.environ["REDIS_URL"])
    os.environ["STREAMDESK_TEST_DB_OF"] = _worker
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("STREAMDESK_DEMO", "1")
# Fixed so no test writes a generated key into .streamdesk/; it protects nothing.
os.environ.setdefault("SECRET_KEY", "tests-only-not-a-secret-" + "x" * 40)

from console.settings import *  # noqa: F403, E402

# The suite imports console.asgi in-process: its tests start recorders themselves (a daphne
# subprocess, on console.settings, records as in production).
STREAMDESK_HISTORY_RECORDER = False
