"""Demo mode installs the examples: a default deployment's settings hold none of them.

Each test loads the settings in a ``manage.py`` subprocess, from a shell without the suite's
mode variables (tests/settings.py sets ``STREAMDESK_DEMO=1`` for the rest of the suite).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support import processes
from tests.support.production_env import fresh_env

# What the settings installed, as JSON on the last line.
SHOW = (
    "import json; from django.conf import settings; "
    "from django.core.management import get_commands; "
    "print(json.dumps({'apps': settings.INSTALLED_APPS, "
    "'budgets': settings.STREAMDESK_RATE_LIMITS, 'commands': sorted(get_commands())}))"
)
# The product's own apps: Django's, channels', htmx's and ours.
PRODUCT_APPS = [
    "daphne",
    "workers",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "console",
]
EXAMPLE_APPS = {
    "workers.examples.tickets",
    "workers.examples.sandbox",
    "workers.examples.security",
    "workers.examples.github",
    "workers.examples.deploys",
    "workers.examples.refunds",
    "workers.examples.demo",
}


def manage(data_dir: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    # The suite's own budgets out, before the test's variables (which may set them) go in.
    env = {k: v for k, v in fresh_env(data_dir).items() if k != "STREAMDESK_RATE_LIMITS"}
    return processes.manage({**env, **variables}, *args)


def loaded(data_dir: Path, **variables: str) -> dict[str, Any]:
    done = manage(data_dir, "shell", "-c", SHOW, **variables)
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return shown


def test_default_settings_install_only_the_product(tmp_path: Path) -> None:
    shown = loaded(tmp_path, SECRET_KEY="k" * 50)
    assert shown["apps"] == PRODUCT_APPS
    assert shown["budgets"] == ""
    assert "demoproducer" not in shown["commands"]


def test_default_help_lists_no_demo_command(tmp_path: Path) -> None:
    done = manage(tmp_path, "help", SECRET_KEY="k" * 50)
    assert done.returncode == 0, done.stderr
    assert "demoproducer" not in done.stdout and "[demo]" not in done.stdout
    assert "runworker" in done.stdout


def test_demo_settings_install_the_examples_budgets_and_producer(tmp_path: Path) -> None:
    shown = loaded(tmp_path, DEBUG="1", STREAMDESK_DEMO="1")
    assert shown["apps"][: len(PRODUCT_APPS)] == PRODUCT_APPS
    assert set(shown["apps"][len(PRODUCT_APPS) :]) == EXAMPLE_APPS
    assert shown["budgets"] == "github=5/s:10,directory=20/s:20,vault=2/s:2,slack=1/s:5"
    assert "demoproducer" in shown["commands"]


def test_demo_help_lists_the_demo_producer(tmp_path: Path) -> None:
    done = manage(tmp_path, "help", DEBUG="1", STREAMDESK_DEMO="1")
    assert done.returncode == 0, done.stderr
    assert "[demo]\n    demoproducer" in done.stdout


def test_budgets_set_in_the_environment_win_in_either_mode(tmp_path: Path) -> None:
    production = loaded(tmp_path, SECRET_KEY="k" * 50, STREAMDESK_RATE_LIMITS="api=1/s")
    demo = loaded(tmp_path, DEBUG="1", STREAMDESK_DEMO="1", STREAMDESK_RATE_LIMITS="api=1/s")
    assert production["budgets"] == demo["budgets"] == "api=1/s"
