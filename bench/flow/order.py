"""Scenario 3's check, pure: from the ``flow.order`` agent's records (in the order the server
took them), every violation of "each subject's events run in publish order, never two at
once, each once" when one worker process was SIGKILLed.

A run the victim had started when it was killed never ends; the event runs again elsewhere,
and that is no violation. Neither is a second run of an event the victim had finished but
not yet acknowledged (at least once); such reruns are counted apart.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Record:
    kind: str  # "start" or "end"
    subject: str
    seq: int
    pid: int
    t_ns: int


def parse(lines: list[str]) -> list[Record]:
    out = []
    for line in lines:
        kind, subject, seq, pid, t_ns = line.split(" ")
        out.append(Record(kind, subject, int(seq), int(pid), int(t_ns)))
    return out


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    interrupted: int = 0  # runs the kill cut short (started, never ended)
    reruns: int = 0  # events the victim finished unacknowledged, run again
    completed: int = 0  # distinct (subject, seq) that ended
    runs: int = 0  # runs started


@dataclass
class _Key:
    inflight: Record | None = None
    done: list[int] = field(default_factory=list)  # seqs in the order they ended
    done_by: dict[int, int] = field(default_factory=dict)  # seq -> pid that ended it
    last_end_ns: int = 0


def check(records: list[Record], per_subject: dict[str, int], victim: int, kill_ns: int) -> Verdict:
    """``per_subject``: how many events each subject was published (seq 0..n-1); ``victim``
    the pid SIGKILLed at ``kill_ns`` (wall clock, as the records)."""
    verdict = Verdict()
    keys: dict[str, _Key] = defaultdict(_Key)
    for rec in records:
        key = keys[rec.subject]
        if rec.kind == "start":
            verdict.runs += 1
            _start(key, rec, (victim, kill_ns), verdict)
        else:
            _end(key, rec, victim, verdict)
    for subject, count in per_subject.items():
        key = keys[subject]
        if key.done != list(range(count)):
            verdict.violations.append(f"{subject}: ended {_short(key.done)}, not 0..{count - 1}")
        if key.inflight is not None and key.inflight.pid != victim:
            verdict.violations.append(f"{subject}: seq {key.inflight.seq} never ended")
    verdict.completed = sum(len(k.done) for k in keys.values())
    return verdict


def _start(key: _Key, rec: Record, kill: tuple[int, int], verdict: Verdict) -> None:
    victim, kill_ns = kill
    if key.inflight is not None:
        if key.inflight.pid == victim and rec.pid != victim and rec.t_ns >= kill_ns:
            verdict.interrupted += 1  # the victim's run, cut short by the kill
        else:
            verdict.violations.append(
                f"{rec.subject}: seq {rec.seq} started while seq {key.inflight.seq} ran"
            )
    expected = len(key.done)
    rerun = bool(key.done) and rec.seq == key.done[-1] and key.done_by[rec.seq] == victim
    if rec.seq != expected and not rerun:
        verdict.violations.append(f"{rec.subject}: seq {rec.seq} started, {expected} was next")
    if rec.t_ns < key.last_end_ns:
        verdict.violations.append(f"{rec.subject}: seq {rec.seq} started before the last end")
    key.inflight = rec


def _end(key: _Key, rec: Record, victim: int, verdict: Verdict) -> None:
    running = key.inflight
    if running is None or (running.seq, running.pid) != (rec.seq, rec.pid):
        verdict.violations.append(f"{rec.subject}: seq {rec.seq} ended but was not running")
    key.inflight = None
    key.last_end_ns = rec.t_ns
    if rec.seq in key.done_by:
        if key.done_by[rec.seq] == victim and rec.pid != victim:
            verdict.reruns += 1
        else:
            verdict.violations.append(f"{rec.subject}: seq {rec.seq} ended twice")
        return
    key.done.append(rec.seq)
    key.done_by[rec.seq] = rec.pid


def _short(seqs: list[int]) -> str:
    return str(seqs) if len(seqs) <= 12 else f"{seqs[:6]}...{seqs[-6:]} ({len(seqs)})"
