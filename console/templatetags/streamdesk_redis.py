"""The Redis page's units: a slowlog duration (µs) and a server's unix time (s)."""

from __future__ import annotations

from django import template

from workers.redis.client_names import CONSOLE, is_worker

register = template.Library()


@register.filter
def micros(value: int) -> str:
    """``850 µs``, ``12.3 ms``, ``1.25 s``."""
    if value < 1_000:
        return f"{value} µs"
    if value < 1_000_000:
        return f"{value / 1000:.1f} ms"
    return f"{value / 1_000_000:.2f} s"


@register.filter
def unix_ms(value: int) -> int:
    """A server's unix time (s) as ms, for ``when``."""
    return int(value) * 1000


@register.filter
def whose(client_name: str) -> str:
    """Whose connection sent a command, by the name Streamdesk gives its own."""
    if is_worker(client_name):
        return "a worker"
    if client_name == CONSOLE:
        return "the console"
    return "not Streamdesk" if client_name else "unnamed: not Streamdesk"
