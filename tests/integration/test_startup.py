"""What the commands do before any event moves: refuse an unmigrated database or a missing
SECRET_KEY, create admin, load the demo only in demo mode, keep the data folder private."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User

from tests.support.processes import ROOT, manage
from tests.support.production_env import fresh_env, production_env
from workers.management.commands.up import PASSWORD_FILE, ensure_admin
from workers.redis.embedded import EmbeddedValkey


def test_runworker_refuses_an_unmigrated_database(tmp_path: Path, redis_url: str) -> None:
    env = dict(
        os.environ,
        REDIS_URL=redis_url,
        DATABASE_URL=f"sqlite:///{tmp_path / 'empty.sqlite3'}",
        DJANGO_SETTINGS_MODULE="console.settings",
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "runworker", "--burst"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "run `python manage.py migrate` first" in done.stderr


@pytest.mark.django_db
def test_up_creates_admin_once(db: Any, tmp_path: Path) -> None:
    first = ensure_admin(tmp_path)
    assert first.created and first.password_file == tmp_path / PASSWORD_FILE
    password = first.password_file.read_text().strip()
    assert len(password) >= 12
    assert stat.S_IMODE(first.password_file.stat().st_mode) == 0o600  # the owner's alone
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff and admin.check_password(password)
    again = ensure_admin(tmp_path)  # a superuser exists: nothing new, the same password
    assert not again.created and again.exists and again.password_file == first.password_file
    assert User.objects.get(username="admin").check_password(password)


@pytest.mark.django_db
def test_up_leaves_an_existing_admin_alone(db: Any, tmp_path: Path) -> None:
    User.objects.create_user("admin", password="theirs")
    found = ensure_admin(tmp_path)
    assert not found.created and found.exists and found.password_file is None
    assert not (tmp_path / PASSWORD_FILE).exists()
    assert User.objects.get(username="admin").check_password("theirs")


SHOW_MODE = (
    "from django.conf import settings; from workers.core.registry import default_registry as r; "
    "print(settings.DEBUG, settings.STREAMDESK_DEMO, sorted(settings.STREAMDESK_WEBHOOKS), "
    "'demo.echo' in r, 'workers.examples.github' in settings.INSTALLED_APPS)"
)


def test_settings_without_secret_key_refuse_to_start(tmp_path: Path) -> None:
    done = manage(fresh_env(tmp_path), "check")
    assert done.returncode == 1
    assert done.stderr.startswith("configuration error: SECRET_KEY is not set")
    assert "Traceback" not in done.stderr


def test_settings_default_is_production_without_demo(tmp_path: Path) -> None:
    done = manage(fresh_env(tmp_path, SECRET_KEY="k" * 50), "shell", "-c", SHOW_MODE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False False [] False False"


def test_settings_demo_mode_loads_the_demo(tmp_path: Path) -> None:
    env = fresh_env(tmp_path, DEBUG="1", STREAMDESK_DEMO="1")
    done = manage(env, "shell", "-c", SHOW_MODE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "True True ['demo'] True True"


def test_settings_debug_generates_a_private_key_and_keeps_it(tmp_path: Path) -> None:
    env = fresh_env(tmp_path / "data", DEBUG="1")
    show = "from django.conf import settings; print(settings.SECRET_KEY)"
    first, second = manage(env, "shell", "-c", show), manage(env, "shell", "-c", show)
    key = (tmp_path / "data" / "secret_key").read_text().strip()
    assert len(key) >= 50
    assert first.stdout.split()[-1] == second.stdout.split()[-1] == key
    assert stat.S_IMODE((tmp_path / "data" / "secret_key").stat().st_mode) == 0o600


def test_demoproducer_refuses_outside_demo_mode(tmp_path: Path) -> None:
    done = manage(fresh_env(tmp_path, SECRET_KEY="k" * 50), "demoproducer", "--count", "1")
    assert done.returncode == 1
    assert "demo mode only (STREAMDESK_DEMO=1" in done.stderr


def modes(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): stat.S_IMODE(p.stat().st_mode) for p in path.rglob("*")}


def test_data_dir_and_sqlite_files_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)  # as an older version left it
    data.chmod(0o755)
    env = fresh_env(data, DEBUG="1")
    env.pop("DATABASE_URL", None)  # the default: SQLite in the data folder
    assert manage(env, "migrate", "-v0").returncode == 0
    with sqlite3.connect(data / "db.sqlite3") as db:  # WAL mode: -wal and -shm while open
        db.execute("CREATE TABLE t (x)")
        files = modes(data)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert {"db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm", "secret_key"} <= set(files)
    assert {name: mode for name, mode in files.items() if mode != 0o600} == {}


def test_embedded_valkey_data_is_private(tmp_path: Path) -> None:
    # A short path: the server listens on a unix socket there, as in a checkout.
    data = Path(tempfile.mkdtemp(prefix="sd-")) / "data"
    server = EmbeddedValkey(data)
    try:
        server.ensure_running()
        client = redis.Redis.from_url(server.url)
        client.set("k", "v")
        client.close()
        files = modes(data)
    finally:
        server.stop()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert any(p.startswith("appendonlydir/") for p in files)
    # Nothing for the group or others: files 0600, folders (and the socket) 0700.
    assert {p: oct(m) for p, m in files.items() if m & 0o077} == {}


def test_check_deploy_is_clean_with_the_documented_environment(tmp_path: Path) -> None:
    env = production_env(STREAMDESK_DATA_DIR=str(tmp_path))
    done = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout
