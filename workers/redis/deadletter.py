"""Dead letters: an entry that cannot or must not run again goes to ``<stream>:dead``, into
the error group of its fingerprint (``workers/errors``; the groups: ``error_groups.py``)."""

from __future__ import annotations

import json
import sys
import sysconfig
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from redis.asyncio.client import Pipeline

from workers.core.keys import EVENT_FIELD, Keys, dead_stream
from workers.core.lua import lua_script
from workers.core.storable import encodable
from workers.errors import Fingerprint, PathRoots, fingerprint

# The error groups' helpers, which every script that writes or removes letters starts with.
ERROR_GROUPS = lua_script(__package__, "error_groups")
DEAD_LETTER = ERROR_GROUPS + lua_script(__package__, "dead_letter")
FINGERPRINT_FIELD = "fingerprint"
# A group's sample error: the last line of a letter's error, cut to this.
SAMPLE_CHARS = 300
# An event type longer than this is no type a registry holds: it is counted as one.
TYPE_CHARS = 200


@dataclass(frozen=True, slots=True)
class DeadLetter:
    event: str
    stream: str
    group: str
    entry_id: str
    deliveries: int
    reason: str
    error: str
    dead_at: str
    by: str
    # A forced replay's salt (workers/core/fanout.py REPLAY_FIELD): a redrive carries it
    # back, so the redriven copy is that replay's run again, not the agent's first run.
    replay: str = ""

    def fields(self) -> dict[Any, Any]:
        """Every value encodable: an error text may hold a lone surrogate (an agent's
        message built from a file name), which no Redis command can carry as it is."""
        out: dict[Any, Any] = {k: encodable(str(v)) for k, v in asdict(self).items()}
        out[EVENT_FIELD] = encodable(self.event)
        if not self.replay:
            del out["replay"]
        return out


@cache
def process_roots() -> PathRoots:
    """This process's module search path and standard library: a frame's file names its
    module the same way on every host (``workers.errors.PathRoots``)."""
    stdlib = {sysconfig.get_paths()[name] for name in ("stdlib", "platstdlib")}
    return PathRoots(tuple(p for p in sys.path if p), tuple(sorted(stdlib)))


def letter_fingerprint(error: str, reason: str) -> Fingerprint:
    """Of the text as the letter stores it: an error holding a lone surrogate (no UTF-8 for
    it) would give a group name and record no command can carry."""
    return fingerprint(encodable(error), encodable(reason), process_roots())


def group_meta(found: Fingerprint, error: str) -> str:
    """What a letter tells its error group (JSON): the fingerprint's parts and its error's
    last line as the group's sample."""
    last = error.rstrip().rsplit("\n", 1)[-1].strip()
    sample = encodable(last[:SAMPLE_CHARS])
    # UTF-8 as it is (not \u escapes): the script's cjson passes it through unchanged.
    return json.dumps({"kind": found.kind, "message": found.message, "frame": found.frame,
                       "error": sample}, ensure_ascii=False)  # fmt: skip


def event_type(raw: str) -> str:
    """The letter's event type for its group's counts; ``(no type)`` for an envelope that
    does not parse (those are letters too)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return "(no type)"
    kind = value.get("type") if isinstance(value, dict) else None
    return encodable(kind[:TYPE_CHARS]) if isinstance(kind, str) and kind else "(no type)"


def queue_dead_letter(pipe: Pipeline, letter: DeadLetter) -> None:
    """XADD to the dead-letter stream, add the letter to its error group, then XACK, in one
    script: a crash between them, or a letter Redis refuses, leaves the entry pending (seen
    again) rather than lost."""
    found = letter_fingerprint(letter.error, letter.reason)
    args: list[Any] = [letter.group, letter.entry_id, found.digest]
    args += [group_meta(found, letter.error), event_type(letter.event)]
    for name, value in {**letter.fields(), FINGERPRINT_FIELD: found.digest}.items():
        args += [name, value]
    # Named after the stream alone, like the dead stream (no prefix): any ``Keys`` builds it.
    index = Keys().error_groups(letter.stream)
    pipe.eval(DEAD_LETTER, 3, letter.stream, dead_stream(letter.stream), index, *args)
