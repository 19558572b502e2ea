"""What the agent already did, from the database (the gate's authority).

For the preview, a count over the range (``done_in_range``: the agent's finished runs
recorded against the range's entries); for the job, which of a page's runs finished
(``done_among``), so a replay without ``--force`` does not copy them.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet

from workers.models import AgentRun
from workers.replay.bounds import id_ms, id_order
from workers.replay.plan import Replay
from workers.store.runs import FINAL, DjangoRunStore

# Every entry id since 2001 has 13 digits of milliseconds: ids of one length compare as
# strings in stream order (but the sequence numbers of one millisecond, checked apart).
MS_DIGITS = 13


def done_in_range(replay: Replay, stream: str, start: str, end: str) -> int:
    """The agent's first runs (not replays) of ``stream``'s entries ``start``..``end`` (ids,
    inclusive) that finished: succeeded, or cancelled. An estimate of what the gate would
    skip: a run of an event published twice counts once, against its first entry."""
    rows = AgentRun.objects.filter(
        agent=replay.run_name,
        stream=stream,
        event_type=replay.event_type,
        replay_of="",
        status__in=FINAL,
    )
    if replay.subject:
        rows = rows.filter(subject=replay.subject)
    return _between(rows, start, end)


def _between(rows: QuerySet[AgentRun], start: str, end: str) -> int:
    lo, hi = id_ms(start), id_ms(end)
    if len(str(lo)) != MS_DIGITS or len(str(hi)) != MS_DIGITS:
        # Hand-made ids: no string order to lean on; few rows, counted here.
        ids = rows.values_list("entry_id", flat=True).iterator(chunk_size=2000)
        return sum(1 for i in ids if _valid(i) and id_order(start) <= id_order(i) <= id_order(end))
    # ``<ms>-`` sorts before every id of that millisecond and ``<ms>.`` after them all.
    inside = rows.filter(entry_id__gte=f"{lo}-", entry_id__lt=f"{hi}.").count()
    early = _in_ms(rows, lo, lambda i: id_order(i) < id_order(start))
    late = _in_ms(rows, hi, lambda i: id_order(i) > id_order(end))
    return inside - early - late


def _in_ms(rows: QuerySet[AgentRun], ms: int, outside: Callable[[str], bool]) -> int:
    """Rows of one millisecond the range leaves out (before its start or after its end)."""
    ids = rows.filter(entry_id__gte=f"{ms}-", entry_id__lt=f"{ms}.").values_list(
        "entry_id", flat=True
    )
    return sum(1 for i in ids if outside(i))


def _valid(entry_id: str) -> bool:
    ms, _, seq = entry_id.partition("-")
    return ms.isdigit() and seq.isdigit()


def done_among(run_hashes: list[str]) -> set[str]:
    """Which of these runs finished (what the gate would skip)."""
    return DjangoRunStore().done_among(run_hashes)
