"""Run records (``workers.core.records.Run``) for the run store's tests."""

from __future__ import annotations

from datetime import UTC, datetime

from workers.core.records import Run


def run(
    event_hash: str,
    lease: str,
    token: int = 1,
    takeover: bool = False,
    started_at: datetime | None = None,
) -> Run:
    """An attempt at ``event_hash`` under ``lease`` ("consumer/entry#n"); started now unless
    ``started_at`` says when."""
    return Run(
        event_hash=event_hash,
        lease=lease,
        token=token,
        consumer=lease.split("/")[0],
        event_type="demo.echo",
        event_id="1",
        source="s",
        subject="",
        stream="streamdesk:events",
        entry_id="1-0",
        started_at=started_at or datetime.now(UTC),
        takeover=takeover,
    )
