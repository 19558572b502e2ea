"""An agent's run figures as its page shows them (``RunFigures``, console/reads/agent_runs.py;
not imported: template tags sit below the reads)."""

from __future__ import annotations

from typing import Protocol

from django import template

register = template.Library()


class Quantiles(Protocol):
    def quantile_ms(self, q: float) -> float | None: ...


@register.filter
def quantile_ms(figures: Quantiles | None, q: float) -> float | None:
    """``figures|quantile_ms:0.95``: the run time (ms) at that quantile, None without runs."""
    return figures.quantile_ms(float(q)) if figures is not None else None
