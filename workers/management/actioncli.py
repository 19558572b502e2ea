"""What the operator-action commands share: flags, the CLI actor, output, foreground jobs."""

from __future__ import annotations

import functools
import getpass
import json
import os
import signal
import socket
import threading
from argparse import ArgumentParser
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import InvalidAction, StreamdeskError
from workers.core.registry import AgentSpec, Registry, default_registry
from workers.from_settings import engine_config, redis_client, stream_partitions
from workers.models import BulkJob, Door, JobStatus
from workers.operations import inputs, jobs
from workers.operations.actions import DeadFilter
from workers.replay import JOB_KINDS
from workers.store.audit import ActionOutcome, Actor, Result

FAILED = (Result.FAILED, Result.PARTIAL, Result.CANCELLED)
# Said in every action command's --help (docs/operations.md, "Exit status").
NOTHING_DONE_HELP = (
    "Exits 1 when nothing was done though something was asked (every id skipped, nothing "
    "matched, already paused): the outcome is then 'noop', printed as usual (--json too)."
)


def cli_actor() -> Actor:
    return Actor(f"cli:{getpass.getuser()}@{socket.gethostname()}", Door.CLI)


def add_where(parser: ArgumentParser, group: bool = True) -> None:
    parser.add_argument("--stream", help="the stream (default: the engine's, STREAMDESK_STREAM)")
    if group:
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--group", help="the consumer group (default: the engine's home group)")
        which.add_argument(
            "--agent",
            metavar="NAME",
            help="the group of the agent named NAME (@agent(name=NAME): agents:NAME; an "
            "agent without a name is named by its event type: the home group)",
        )


def named_agent(name: str, registry: Registry = default_registry) -> AgentSpec:
    """The agent ``name`` names (as ``runworker --agent`` does: a named agent, or a type's
    agent without a name by its type): CommandError naming the agents there are if none."""
    spec = registry.by_name(name)
    if spec is None:
        known = ", ".join(sorted(s.name for s in registry if not s.placeholder)) or "none"
        raise CommandError(f"no agent is named {name!r} (the agents: {known})")
    return spec


def agent_group(name: str, home: str, registry: Registry = default_registry) -> str:
    """The consumer group of the agent ``name``."""
    return named_agent(name, registry).group(home)


def add_run_agent(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        metavar="NAME",
        help="EVENT_HASH is then the event's own hash, and the run meant is that agent's "
        "(each agent runs an event under a hash of its own)",
    )


def run_of(event_hash: str, agent: str | None) -> str:
    """The run hash a command means: ``event_hash`` itself, or with ``--agent`` that agent's
    run of the event ``event_hash`` names (checked first: a run hash of a malformed one
    would look well formed)."""
    if not agent:
        return event_hash
    spec = named_agent(agent)
    try:
        return spec.run_hash(inputs.event_hash(event_hash))
    except InvalidAction as exc:
        raise CommandError(str(exc)) from exc


def add_output(parser: ArgumentParser, dry_run: bool = True, background: bool = False) -> None:
    if dry_run:
        parser.add_argument(
            "--dry-run", action="store_true", help="change nothing; count what would be acted on"
        )
    if background:
        parser.add_argument(
            "--background",
            action="store_true",
            help="over 1,000 entries or a filter: only queue the bulk job (the console runs "
            "it) instead of running it here with progress on stderr",
        )
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON object")


def add_filter(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--all", action="store_true", help="every dead letter (narrowed by the flags below)"
    )
    parser.add_argument("--type", default="", help="only events of this type")
    parser.add_argument(
        "--letter-reason",
        default="",
        help="only letters dead-lettered for this reason (max-deliveries, decode-error, ...)",
    )
    parser.add_argument("--since", help="dead-lettered at or after: ISO time (UTC) or epoch ms")
    parser.add_argument("--until", help="dead-lettered before: ISO time (UTC) or epoch ms")
    parser.add_argument(
        "--agent",
        metavar="NAME",
        help="only letters of the agent named NAME (dead-lettered in its group; an agent "
        "without a name is named by its event type: the home group's letters)",
    )


def where_each(options: dict[str, Any]) -> list[str]:
    """The streams a dead-letter action given a filter acts on: the one named, or each
    partition of a partitioned stream; with ids, one partition must be named (an id names
    an entry of one partition)."""
    stream = options.get("stream") or engine_config().stream
    if options.get("ids"):
        return [where(options)[0]]
    return stream_partitions(stream)


def where(options: dict[str, Any], whole_stream: bool = False) -> tuple[str, str]:
    """The stream and group the flags name (the engine's by default; ``--agent``: that
    agent's group). A partitioned stream's entries live in its partitions: an action on
    entries must name one, except one that acts on the whole stream (``whole_stream``:
    pause, resume)."""
    config = engine_config()
    stream = options.get("stream") or config.stream
    streams = stream_partitions(stream)
    if not whole_stream and streams != [stream]:
        raise CommandError(
            f"{stream} is split into {len(streams)} partitions (STREAMDESK_PARTITIONS) and "
            f"this acts on the entries of one: name it with --stream ({', '.join(streams)})"
        )
    if options.get("agent"):
        # argparse refuses both on a command line; call_command passes options unchecked.
        if options.get("group"):
            raise CommandError("give --agent or --group, not both")
        return stream, agent_group(options["agent"], config.group)
    return stream, options.get("group") or config.group


def parse_time_ms(text: str | None, flag: str) -> int:
    """Epoch milliseconds from ``1767225600000`` or an ISO time (UTC unless it says)."""
    if not text:
        return 0
    if text.isdigit():
        return int(text)
    try:
        at = datetime.fromisoformat(text)
    except ValueError as exc:
        raise CommandError(f"{flag}: {text!r} is neither an ISO time nor epoch ms") from exc
    return int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000)


def dead_filter(options: dict[str, Any]) -> DeadFilter | None:
    """The filter the flags describe; None when no filter flag (nor ``--all``) was given."""
    agent = options.get("agent")
    f = DeadFilter(
        type=options["type"],
        reason=options["letter_reason"],
        since_ms=parse_time_ms(options["since"], "--since"),
        until_ms=parse_time_ms(options["until"], "--until"),
        group=agent_group(agent, engine_config().group) if agent else "",
    )
    return f if options["all"] or f != DeadFilter() else None


def render(outcome: ActionOutcome) -> str:
    where = outcome.stream + (f" group {outcome.group}" if outcome.group else "")
    verb = "would act on" if outcome.outcome == Result.DRY_RUN else "done"
    line = f"{outcome.action} on {where}: {outcome.outcome}"
    line += f", {verb} {outcome.count}" if verb != "done" else f", {outcome.count} done"
    line += f", {outcome.skipped} skipped"
    if outcome.detail:
        line += f" ({outcome.detail})"
    line += f" [audit #{outcome.audit_id}" + (
        f", job #{outcome.job_id}]" if outcome.job_id else "]"
    )
    lines = [line, *(f"  {new_id}" for new_id in outcome.new_ids)]
    return "\n".join(lines)


def progress_line(job: BulkJob) -> str:
    of = f" of ~{job.total}" if job.total is not None else ""
    return f"job #{job.pk} {job.action}: {job.done} done{of}, {job.skipped} skipped"


@contextmanager
def interrupt_sets(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C stops a foreground job after its current batch instead of killing it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def nothing_done(outcome: ActionOutcome) -> bool:
    """Asked to act and did nothing: a ``noop``, or a bulk job that skipped everything."""
    if outcome.outcome == Result.NOOP:
        return True
    return outcome.outcome == Result.OK and not outcome.count and outcome.skipped > 0


class ActionCommand(BaseCommand):
    """Calls one operation, runs the bulk job it queued (unless ``--background``), prints."""

    # Entries a foreground job reads and acts on at once.
    job_batch = jobs.DEFAULT_BATCH

    def perform(self, options: dict[str, Any], call: Callable[[], ActionOutcome]) -> None:
        self.emit(self._outcome(options, call), options["json"])

    def perform_each(
        self, options: dict[str, Any], streams: list[str], call: Callable[[str], ActionOutcome]
    ) -> None:
        """The action on each of ``streams`` (a partitioned stream's partitions), each its own
        outcome and audit record, printed as it ends (``--json``: one object per line). Fails
        if one failed; exits 1 if none did anything."""
        if len(streams) == 1:
            self.perform(options, lambda: call(streams[0]))
            return
        outcomes = []
        for stream in streams:
            outcome = self._outcome(options, functools.partial(call, stream))
            self.stdout.write(json.dumps(outcome.as_dict()) if options["json"] else render(outcome))
            outcomes.append(outcome)
        failed = [o for o in outcomes if o.outcome in FAILED]
        if failed:
            raise CommandError(f"{failed[0].action} {failed[0].outcome} on {failed[0].stream}")
        if all(nothing_done(o) for o in outcomes):
            raise CommandError(f"{outcomes[0].action}: nothing done in any partition", returncode=1)

    def _outcome(self, options: dict[str, Any], call: Callable[[], ActionOutcome]) -> ActionOutcome:
        try:
            outcome = call()
            if outcome.outcome == Result.QUEUED and not options.get("background"):
                outcome = self.run_job(outcome.job_id or 0)
        except (StreamdeskError, redis.RedisError) as exc:
            raise CommandError(self.explain(exc)) from exc
        return outcome

    def explain(self, exc: Exception) -> str:
        """What to print for an action that raised (a command may add a hint)."""
        return str(exc)

    def emit(self, outcome: ActionOutcome, as_json: bool) -> None:
        self.stdout.write(json.dumps(outcome.as_dict()) if as_json else render(outcome))
        if outcome.outcome in FAILED:
            raise CommandError(f"{outcome.action} {outcome.outcome}: {outcome.detail}")
        if nothing_done(outcome):
            why = f" ({outcome.detail})" if outcome.detail else ""
            raise CommandError(f"{outcome.action}: nothing done{why}", returncode=1)

    def run_job(self, job_id: int) -> ActionOutcome:
        """Run a bulk job here, progress on stderr; Ctrl-C hands it back, queued."""
        stop = threading.Event()
        owner = f"{cli_actor().name}:{os.getpid()}"
        with interrupt_sets(stop):
            job = jobs.run(
                job_id,
                redis_client(),
                engine_config().keys,
                owner,
                self.job_batch,
                should_stop=stop.is_set,
                progress=lambda j: self.stderr.write(progress_line(j)),
                kinds=JOB_KINDS,  # a replay's job resumed by ``manage.py jobs --run``
            )
        if stop.is_set() and job.status == JobStatus.QUEUED:
            raise CommandError(
                f"stopped after {job.done} entries: job #{job.pk} is queued again after its "
                f"cursor; the console's runner resumes it (or: manage.py jobs --run {job.pk}; "
                f"--cancel {job.pk} to drop it)"
            )
        return jobs.outcome(job)
