"""What ``make bench-idle`` leaves idle: runworker with 1, 2 and 10 processes, and each peer
(dramatiq, arq, Celery, taskiq-redis, rq) with 1 and 10 workers, each by its own command
line and otherwise its defaults."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from bench.common.harness import PYTHON, ROOT

BIN = Path(PYTHON).parent  # the venv's console scripts: dramatiq, celery, taskiq, rq
# arq wants redis<6 and this project runs redis 6: ``make bench-idle`` gives it a venv of its
# own, so installing it changes nothing the code under test imports.
ARQ_VENV = ROOT / ".venv" / "bench-arq"
PEERS_PACKAGE = "bench.idle.peers"
STREAMDESK = "runworker"


@dataclass(frozen=True, slots=True)
class Subject:
    """One idle fleet: ``copies`` of ``argv`` (``{url}`` stands for the server's URL), ready
    once its logs hold ``ready_line`` ``ready_count`` times (a peer), or once ``workers``
    heartbeats are in the workers index (runworker)."""

    key: str  # what --only names
    system: str  # the table's row: runworker, dramatiq, ...
    workers: int  # idle workers (consumers) it runs
    argv: tuple[str, ...]
    copies: int = 1
    ready_line: str = ""  # empty: runworker, ready by its heartbeats
    ready_count: int = 1
    missing: str = ""  # why it cannot run here (a peer not installed), else empty

    @property
    def streamdesk(self) -> bool:
        return self.system == STREAMDESK

    def argv_for(self, url: str) -> list[str]:
        return [a.replace("{url}", url) for a in self.argv]

    @property
    def shown(self) -> str:
        """The command line as a reader types it (with ``N x`` when started N times)."""
        words = [_shown_word(a) for a in self.argv]
        line = " ".join(words).replace("{url}", "$REDIS_URL")
        return f"{self.copies} x `{line}`" if self.copies > 1 else f"`{line}`"


def _shown_word(word: str) -> str:
    if word == PYTHON:
        return "python"
    path = Path(word)
    return path.name if path.is_absolute() and path.parent.name == "bin" else word


def runworker(processes: int) -> Subject:
    argv: tuple[str, ...] = (PYTHON, "manage.py", "runworker")
    if processes > 1:
        argv += ("--processes", str(processes))
    key = STREAMDESK if processes == 1 else f"{STREAMDESK}-{processes}"
    return Subject(key, STREAMDESK, processes, argv)


def _installed(module: str, what: str) -> str:
    if importlib.util.find_spec(module) is None:
        return f"{what} is not installed (`make bench-idle` installs the bench-peers extra)"
    return ""


def dramatiq(workers: int) -> Subject:
    # --processes: the CLI's default is one per CPU; its 8 threads each are left as they are.
    argv = (str(BIN / "dramatiq"), f"{PEERS_PACKAGE}.dramatiq_app", "--processes", str(workers))
    missing = _installed("dramatiq", "dramatiq")
    return Subject(
        _key("dramatiq", workers),
        "dramatiq",
        workers,
        argv,
        ready_line="Worker process is ready for action",
        ready_count=workers,
        missing=missing,
    )


def celery(workers: int) -> Subject:
    # --loglevel INFO only so the log says when it is ready; the prefork pool is the default.
    app = f"{PEERS_PACKAGE}.celery_app"
    argv: tuple[str, ...] = (
        str(BIN / "celery"),
        "-A",
        app,
        "worker",
        "--concurrency",
        str(workers),
    )
    argv += ("--loglevel", "INFO")
    missing = _installed("celery", "Celery")
    return Subject(
        _key("celery", workers), "Celery", workers, argv, ready_line=" ready.", missing=missing
    )


def taskiq(workers: int) -> Subject:
    app = f"{PEERS_PACKAGE}.taskiq_app:broker"
    argv = (str(BIN / "taskiq"), "worker", app, "--workers", str(workers))
    missing = _installed("taskiq_redis", "taskiq-redis")
    return Subject(
        _key("taskiq", workers),
        "taskiq-redis",
        workers,
        argv,
        ready_line="Listening started",
        ready_count=workers,
        missing=missing,
    )


def rq(workers: int) -> Subject:
    # One `rq worker` per worker, as rq is usually deployed.
    argv = (str(BIN / "rq"), "worker", "-u", "{url}")
    missing = _installed("rq", "rq")
    return Subject(
        _key("rq", workers),
        "rq",
        workers,
        argv,
        copies=workers,
        ready_line="Listening on",
        ready_count=workers,
        missing=missing,
    )


def arq(workers: int) -> Subject:
    # One `arq` process per worker: arq's CLI runs one worker.
    binary = ARQ_VENV / "bin" / "arq"
    argv = (str(binary), f"{PEERS_PACKAGE}.arq_app.WorkerSettings")
    missing = "" if binary.exists() else f"arq is not installed in {ARQ_VENV.relative_to(ROOT)}"
    return Subject(
        _key("arq", workers),
        "arq",
        workers,
        argv,
        copies=workers,
        ready_line="Starting worker for",
        ready_count=workers,
        missing=missing,
    )


def _key(name: str, workers: int) -> str:
    return name if workers == 1 else f"{name}-{workers}"


FLEET = 10  # the "10 idle workers"
PEERS = (dramatiq, arq, celery, taskiq, rq)  # the order
SYSTEMS = (STREAMDESK, "dramatiq", "arq", "Celery", "taskiq-redis", "rq")


def all_subjects() -> list[Subject]:
    """Every subject, runworker's first (they come first should time run short)."""
    subjects = [runworker(1), runworker(2), runworker(FLEET)]
    for peer in PEERS:
        subjects += [peer(1), peer(FLEET)]
    return subjects
