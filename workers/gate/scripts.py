"""Reads the gate's Lua scripts from ``workers/gate/lua/`` (shipped as package data)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def lua(name: str) -> str:
    """The text of ``lua/<name>.lua`` without its whole-line ``--`` comments: they document
    the file, and scripts queued as EVAL would otherwise send them with every call."""
    text = files(__package__).joinpath("lua", f"{name}.lua").read_text(encoding="utf-8")
    return "".join(
        line for line in text.splitlines(keepends=True) if not line.lstrip().startswith("--")
    )
