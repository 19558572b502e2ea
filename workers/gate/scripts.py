"""Reads the gate's Lua scripts from ``workers/gate/lua/`` (shipped as package data)."""

from __future__ import annotations

from workers.core.lua import lua_script


def lua(name: str) -> str:
    """The text of ``lua/<name>.lua``, loaded like every module's scripts
    (``workers.core.lua.lua_script``: whole-line comments dropped)."""
    return lua_script(__package__, name)
