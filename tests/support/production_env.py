"""The production environment docs/operations.md documents, read from the page itself."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from tests.support.processes import ROOT

# Set by the suite (tests/settings.py) or a developer's shell; production has none of them.
MODE_VARIABLES = ("DEBUG", "STREAMDESK_DEMO", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")


def documented_env() -> dict[str, str]:
    """The ``# /etc/streamdesk.env`` block, placeholders (``<...>``) filled in."""
    page = (ROOT / "docs" / "operations.md").read_text()
    block = re.search(r"```sh\n# /etc/streamdesk\.env\n(.*?)```", page, re.S)
    assert block, "docs/operations.md lost its /etc/streamdesk.env block"
    env = dict(line.split("=", 1) for line in block.group(1).splitlines() if "=" in line)
    env["SECRET_KEY"] = secrets.token_urlsafe(50)
    return {name: re.sub(r"<[^>]*>", "pw", value) for name, value in env.items()}


def production_env(**overrides: str) -> dict[str, str]:
    """This process's environment without the suite's mode variables, plus the documented one."""
    env = {k: v for k, v in os.environ.items() if k not in MODE_VARIABLES}
    return {**env, **documented_env(), **overrides}


def fresh_env(data_dir: Path, **variables: str) -> dict[str, str]:
    """A shell with none of the mode variables set, its own data folder, and ``variables``."""
    env = {k: v for k, v in os.environ.items() if k not in MODE_VARIABLES}
    env.update(STREAMDESK_DATA_DIR=str(data_dir), **variables)
    return env
