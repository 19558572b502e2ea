"""Scraping the metrics as Prometheus would: the text format parsed by prometheus_client's own
parser into ``{(sample name, sorted labels): value}``."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Series:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(series: Series, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    assert key in series, f"{name}{labels} is not exposed"
    return series[key]


def names(text: str) -> set[str]:
    """Every sample name exposed (``_bucket``, ``_sum``, ``_count``, ``_total`` included)."""
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}
