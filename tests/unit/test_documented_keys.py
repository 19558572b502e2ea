"""docs/configuration.md's Redis keys and counters name exactly what the code builds and counts:
every ``Keys`` method and property, every ``stats.COUNTERS`` name and the prune counter appear,
and nothing documented is missing from the code."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from workers.core.keys import DEFAULT_GROUP, DEFAULT_STREAM, Keys, dead_stream, deferred_entries
from workers.redis import stats
from workers.redis.consumers import pruned_field

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
# Keys not built by ``Keys``: the default stream, its dead letters and its group's deferrals.
STREAM_KEYS = {
    DEFAULT_STREAM,
    dead_stream(DEFAULT_STREAM),
    deferred_entries(DEFAULT_STREAM, DEFAULT_GROUP),
}


def table_after(heading: str) -> list[list[str]]:
    """The cells of the first markdown table under ``heading`` (``\\|`` is a literal bar)."""
    lines = DOC.read_text().splitlines()
    start = lines.index(heading)
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if not set(cells[0]) <= set("-"):
            rows.append(cells)
    return rows[1:]  # without the header row


def first_column(heading: str) -> list[str]:
    names = []
    for cells in table_after(heading):
        found = re.fullmatch(r"`([^`]+)`", cells[0])
        assert found, f"{heading}: the first cell is one `name`: {cells[0]!r}"
        names.append(found.group(1))
    return names


def built_keys() -> dict[str, str]:
    """Every public ``Keys`` member's key, with ``<argument>`` for each argument."""
    keys = Keys()
    built = {}
    for name, member in inspect.getmembers(Keys):
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            built[name] = getattr(keys, name)
        elif inspect.isfunction(member):
            params = list(inspect.signature(member).parameters)[1:]
            built[name] = getattr(keys, name)(*(f"<{p}>" for p in params))
    return built


def test_documented_keys_every_keys_member_is_in_the_table() -> None:
    documented = set(first_column("## Redis keys"))
    missing = {name: key for name, key in built_keys().items() if key not in documented}
    assert not missing, f"Keys members missing from docs/configuration.md: {missing}"


def test_documented_keys_name_only_what_the_code_builds() -> None:
    documented = first_column("## Redis keys")
    known = set(built_keys().values()) | STREAM_KEYS
    assert [key for key in documented if key not in known] == []
    assert len(documented) == len(set(documented))


def test_documented_keys_counters_are_exactly_the_codes() -> None:
    documented = first_column("### Counters")
    assert sorted(documented) == sorted([*stats.COUNTERS, pruned_field("<group>")])
