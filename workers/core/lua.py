"""Reads a module's Lua scripts from the ``lua/`` directory beside it (shipped as package data).

Every script that runs in Redis lives in a ``.lua`` file next to the module that owns it, so it
is read, diffed and linted as Lua; this is the one loader they all go through.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def lua_script(package: str, name: str) -> str:
    """The text of ``<package>/lua/<name>.lua`` without its whole-line ``--`` comments: they
    document the file, and scripts queued as EVAL would otherwise send them with every call.

    ``package`` is the caller's ``__package__``: the file sits beside the module that loads it.
    """
    text = files(package).joinpath("lua", f"{name}.lua").read_text(encoding="utf-8")
    return "".join(
        line for line in text.splitlines(keepends=True) if not line.lstrip().startswith("--")
    )
