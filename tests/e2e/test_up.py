"""``manage.py up`` as ``make run`` starts it: real processes, a real SIGKILL, a real Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import ROOT
from tests.support.wait import wait_for
from workers.redis.embedded import free_port

pytestmark = pytest.mark.e2e

# runworker --processes names its children on start (workers/engine/processes.py).
SUPERVISING = r"supervising \d+ worker processes \(pids ([\d, ]+)\)"
# A cold start (Django, daphne, the migrations check) took over 30 s once on a shared 2-CPU
# machine under load: a start is given this long, and a start that died fails at once.
START_TIMEOUT_S = 120
# Daphne's access log line for a request: 127.0.0.1:54321 - - [04/Dec/2026:10:01:40] "GET /x" 200 12
ACCESS_LINE = r'^\S+ - - \[[^\]]+\] "GET {path}" \d{{3}} \d+$'


class Up:
    def __init__(self, env: dict[str, str], log: Path, port: int, workers: int = 2) -> None:
        self.log = log
        self.port = port
        args = ["up", "--workers", str(workers), "--no-demo", "--port", str(port)]
        with open(log, "wb") as out:  # the child keeps its own fd
            self.proc = subprocess.Popen(
                [sys.executable, "manage.py", *args],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def pids(self) -> dict[str, int]:
        """The children's pids: the banner's, runworker's workers (worker-1, worker-2...),
        then each restart's."""
        found = {m[0]: int(m[1]) for m in re.findall(r"^  (\S+)\s+pid (\d+)$", self.output(), re.M)}
        supervised = re.search(SUPERVISING, self.output())
        if supervised:
            pids = supervised.group(1).split(", ")
            found.update({f"worker-{i}": int(pid) for i, pid in enumerate(pids, start=1)})
        # up's own lines start with the name; runworker's supervisor logs "...: worker-2 ..."
        restarts = r"(?:^|: )(\S+) restarted: pid (\d+)"
        for name, pid in re.findall(restarts, self.output(), re.M):
            found[name] = int(pid)
        return found

    def console_answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/login/", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(running: Up) -> None:
    if running.proc.poll() is None:
        running.proc.send_signal(signal.SIGINT)
        try:
            running.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            running.proc.kill()
    for pid in running.pids().values():
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def up_env(worker_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``up``'s environment with a data folder of its own: the admin password it writes must
    not land in the checkout's ``.streamdesk/``."""
    return {**worker_env, "STREAMDESK_DATA_DIR": str(tmp_path / "data")}


@pytest.fixture
def up(up_env: dict[str, str], tmp_path: Path) -> Iterator[Up]:
    running = Up(up_env, tmp_path / "up.log", free_port())
    try:
        children = {"worker-1", "worker-2", "console"}
        wait_for(lambda: children <= set(running.pids()), START_TIMEOUT_S, what="up")
        wait_for(running.console_answers, START_TIMEOUT_S, what="the console")
        yield running
    finally:
        stop(running)


def test_up_restarts_a_killed_worker_and_keeps_the_others(up: Up) -> None:
    before = up.pids()
    os.kill(before["worker-2"], signal.SIGKILL)

    wait_for(lambda: "worker-2 restarted" in up.output(), what="worker-2 to come back")
    after = up.pids()
    assert after["worker-2"] != before["worker-2"] and alive(after["worker-2"])
    assert f"worker-2 (pid {before['worker-2']}) killed by SIGKILL" in up.output()
    assert after["worker-1"] == before["worker-1"] and alive(before["worker-1"])
    assert after["console"] == before["console"] and alive(before["console"])
    assert up.console_answers()
    assert up.proc.poll() is None


def test_up_stops_every_child_on_ctrl_c(up: Up) -> None:
    pids = up.pids()
    up.proc.send_signal(signal.SIGINT)
    assert up.proc.wait(timeout=60) == 0
    assert [name for name, pid in pids.items() if alive(pid)] == []
    assert "all processes stopped" in up.output()


def wait_until_serving(running: Up) -> None:
    """Until the banner is out and the console answers; fails at once (with up's output) if
    ``up`` exited meanwhile, else after START_TIMEOUT_S."""

    def serving() -> bool:
        if running.proc.poll() is not None:
            raise AssertionError(f"up exited {running.proc.returncode}:\n{running.output()}")
        return "Ctrl-C stops everything" in running.output() and running.console_answers()

    wait_for(serving, timeout_s=START_TIMEOUT_S, what="up's banner and its console")


def started_once(env: dict[str, str], log: Path, paths: tuple[str, ...] = ()) -> str:
    """Start ``up`` (the console only), wait for its banner and the console, GET ``paths``,
    stop it; its whole output (every buffer flushed: the processes have exited)."""
    running = Up(env, log, free_port(), workers=0)
    try:
        wait_until_serving(running)
        for path in paths:
            with urllib.request.urlopen(f"http://127.0.0.1:{running.port}{path}", timeout=10):
                pass
    finally:
        stop(running)
    return running.output()


def access_lines(output: str, path: str) -> list[str]:
    return re.findall(ACCESS_LINE.format(path=re.escape(path)), output, re.M)


# Pages a newcomer's browser fetches: each query is unique, so a line for it is this run's.
PAGES = ("/login/?probe=1", "/login/?probe=2", "/static/console/console.css?probe=3")


def test_up_logs_no_request_by_default(up_env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in up_env.items() if k != "ACCESS_LOG"}  # make run's default
    output = started_once(env, tmp_path / "quiet.log", PAGES)
    assert [p for p in PAGES if access_lines(output, p)] == []
    assert "probe=" not in output  # nor in any other shape
    assert "no access log: ACCESS_LOG=1 turns it on" in output


def test_up_logs_each_request_with_access_log(up_env: dict[str, str], tmp_path: Path) -> None:
    output = started_once({**up_env, "ACCESS_LOG": "1"}, tmp_path / "access.log", PAGES)
    assert [len(access_lines(output, p)) for p in PAGES] == [1, 1, 1], output
    assert "no access log" not in output


def test_up_writes_the_admin_password_to_a_private_file(
    up_env: dict[str, str], tmp_path: Path
) -> None:
    from django.contrib.auth.models import User

    first = started_once(up_env, tmp_path / "first.log")

    path = Path(up_env["STREAMDESK_DATA_DIR"]) / "admin-password"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert User.objects.get(username="admin").check_password(path.read_text().strip())
    assert f"password in {path} (readable by you only)" in first
    assert path.read_text().strip() not in first  # the file, not the scrolling terminal
    assert "no access log: ACCESS_LOG=1 turns it on" in first


def test_up_second_start_says_admin_exists_and_how_to_reset(
    up_env: dict[str, str], tmp_path: Path
) -> None:
    from django.contrib.auth.models import User

    started_once(up_env, tmp_path / "first.log")
    second = started_once(up_env, tmp_path / "second.log")

    path = Path(up_env["STREAMDESK_DATA_DIR"]) / "admin-password"
    assert "admin (the user exists already)" in second
    assert f"its password: cat {path}" in second
    assert "to reset its password: python manage.py changepassword admin" in second
    assert User.objects.filter(username="admin").count() == 1

    # Once the password is changed, the file is stale: the banner no longer points at it.
    admin = User.objects.get(username="admin")
    admin.set_password("changed-by-hand")
    admin.save()
    third = started_once(up_env, tmp_path / "third.log")
    assert "its password: cat" not in third
    assert "to reset its password: python manage.py changepassword admin" in third
