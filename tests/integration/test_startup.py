"""What the commands do before any event moves: refuse an unmigrated database, create admin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.conftest import ROOT
from workers.management.commands.up import ensure_admin


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
def test_up_creates_admin_once(db: Any) -> None:
    password = ensure_admin()
    assert password and len(password) >= 12
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff and admin.check_password(password)
    assert ensure_admin() is None  # a superuser exists: nothing new, no password printed


@pytest.mark.django_db
def test_up_leaves_an_existing_admin_alone(db: Any) -> None:
    User.objects.create_user("admin", password="theirs")
    assert ensure_admin() is None
    assert User.objects.get(username="admin").check_password("theirs")
