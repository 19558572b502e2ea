"""Every Redis key name Streamdesk uses, built in one place."""

from __future__ import annotations

DEFAULT_PREFIX = "streamdesk:"
DEFAULT_STREAM = "streamdesk:events"
DEFAULT_GROUP = "agents"
DEAD_SUFFIX = ":dead"
EVENT_FIELD = "event"


def dead_stream(stream: str) -> str:
    """The dead-letter stream that belongs to ``stream``."""
    return f"{stream}{DEAD_SUFFIX}"


def deferred_entries(stream: str, group: str) -> str:
    """The group's entries deferred for a rate budget's token, by when each is due
    (workers/engine/defer.py). Named after the stream, in its cluster slot (one script
    takes entries from both): ``streamdesk:{events:3}:deferred:agents`` for a partition,
    ``{streamdesk:events}:deferred:agents`` for a stream without a hash tag."""
    tagged = slot_tag(stream) != stream
    return f"{stream if tagged else '{' + stream + '}'}:deferred:{group}"


def _in_slot_of(stream: str) -> str:
    """``stream`` itself if it has a hash tag, else ``{stream}``: a key named after it then
    lands in its cluster slot."""
    return stream if slot_tag(stream) != stream else "{" + stream + "}"


def is_dead_stream(stream: str) -> bool:
    return stream.endswith(DEAD_SUFFIX)


def slot_tag(key: str) -> str:
    """What Redis Cluster hashes of ``key``: its ``{tag}`` if it has one, else all of it."""
    start = key.find("{")
    end = key.find("}", start + 1) if start >= 0 else -1
    return key[start + 1 : end] if end > start + 1 else key


def logical_stream(stream: str) -> str:
    """The logical stream a partition stream belongs to (a stream without a tag is its own):
    ``streamdesk:{events:3}`` -> ``streamdesk:events``."""
    tag = slot_tag(stream)
    if tag == stream:
        return stream
    name, sep, index = tag.rpartition(":")
    if not sep or not index.partition(".")[0].isdigit():
        return stream
    start = stream.find("{")
    return stream[:start] + name + stream[start + len(tag) + 2 :]


class Keys:
    """Key names under one prefix (``streamdesk:`` by default)."""

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        self.prefix = prefix

    def gate(self, event_hash: str, stream: str = "") -> str:
        """The gate record of one event. A partition stream's events keep theirs in its
        cluster slot (``streamdesk:idem:{events:3}:<hash>``): one script takes a batch's."""
        tag = slot_tag(stream) if stream else ""
        if tag and tag != stream:
            return f"{self.prefix}idem:{{{tag}}}:{event_hash}"
        return f"{self.prefix}idem:{event_hash}"

    def webhook_seen(self, stream: str, digest: str) -> str:
        """A webhook body already published to ``stream`` (its entry id and event hash,
        expiring with the replay window); in the stream's cluster slot, as one script
        writes both."""
        return f"{self.prefix}webhooks:seen:{{{slot_tag(stream)}}}:{digest}"

    def stats(self, stream: str) -> str:
        """Engine counters for one stream (a hash: processed, failed, ...)."""
        return f"{self.prefix}stats:{stream}"

    def group_stats(self, stream: str, group: str) -> str:
        """The same counters for one consumer group of ``stream``: one agent's, or the home
        group's (workers/core/fanout.py), read per agent by the console and ``/metrics``."""
        return f"{self.prefix}stats:{stream}:group:{group}"

    @property
    def streams_index(self) -> str:
        """A set of every stream a worker or producer has touched, so no one SCANs."""
        return f"{self.prefix}stats:streams"

    @property
    def usage(self) -> str:
        """Model usage paid for, by event type (a hash: ``<type>|calls``, ``|prompt_tokens``,
        ``|completion_tokens``, ``|cost_usd``)."""
        return f"{self.prefix}stats:usage"

    @property
    def run_durations(self) -> str:
        """How long agents ran, by event type, as histogram buckets every worker adds to (a
        hash: ``<type>|<bound>`` runs in that bucket alone, ``<type>|sum`` seconds in all;
        workers/redis/stats.py ``DURATION_BUCKETS_S``)."""
        return f"{self.prefix}stats:durations"

    def worker(self, consumer: str) -> str:
        """One worker's heartbeat (a hash with a TTL)."""
        return f"{self.prefix}workers:{consumer}"

    @property
    def workers_index(self) -> str:
        """A sorted set of worker names scored by last heartbeat (ms)."""
        return f"{self.prefix}workers"

    def history(self, resolution: str) -> str:
        """Recorded samples at one resolution (``1s``, ``10s``, ``1m``): a sorted set of JSON
        points scored by their time (ms), trimmed by age (workers/monitor/history.py). In one
        cluster slot with the recorder lease: one script checks the lease and appends."""
        return f"{self.prefix}{{history}}:{resolution}"

    def untagged_history(self, resolution: str) -> str:
        """Where ``history`` was kept before it had a hash tag; the recorder renames it."""
        return f"{self.prefix}history:{resolution}"

    def paused(self, stream: str, group: str) -> str:
        """Set while a group is paused: who paused it and when (no expiry). One key for a
        logical stream's partitions: pausing any of them pauses them all."""
        return f"{self.prefix}paused:{logical_stream(stream)}:{group}"

    @property
    def pause_channel(self) -> str:
        """Pub/sub channel told the ``paused`` key's name whenever a group is paused or
        resumed, so workers learn it without polling (workers/engine/pause.py)."""
        return f"{self.prefix}paused"

    @property
    def cancel_channel(self) -> str:
        """Pub/sub channel told an event hash when an operator asks to cancel its running
        agent; the request itself is on the gate record, which the lease renewal reads
        (workers/cancel/)."""
        return f"{self.prefix}cancel"

    def sweep(self, stream: str, group: str) -> str:
        """Held by the worker that sweeps the group's pending entries next; it expires when
        the next sweep is due (workers/engine/sweep.py): one sweep per group for the fleet."""
        return f"{self.prefix}sweep:{stream}:{group}"

    def waits(self, stream: str, group: str) -> str:
        """When each entry held back on purpose (a retry's backoff, a rate budget's token, a
        duplicate waiting on its twin's lease) is due again: a sorted set of entry ids scored
        by due time (ms). The engine keeps that wait as an idle time nobody can read back."""
        return f"{self.prefix}waits:{stream}:{group}"

    def delayed(self, stream: str) -> str:
        """Events published with a delay (``publish(delay_s=)``, workers/timers), waiting to
        enter ``stream``: a sorted set of envelope JSON scored by when each is due (ms). In
        the stream's cluster slot, as one script moves the due ones into it:
        ``{streamdesk:events}:delayed``, ``streamdesk:{events:3}:delayed`` for a partition."""
        return f"{_in_slot_of(stream)}:delayed"

    def wait(self, stream: str, event_hash: str) -> str:
        """The wait of one run that gave back its slot (``ctx.sleep``, ``ctx.wait_for_event``,
        workers/waits): a hash (state, what it waits for, since, until, the answer). One per
        run, as a run waits for one thing at a time; in the stream's cluster slot."""
        return f"{_in_slot_of(stream)}:wait:{event_hash}"

    def waiting(self, stream: str) -> str:
        """Every run waiting on ``stream``: a sorted set of event hashes scored by when each
        began to wait (ms), so the console pages through them without a scan."""
        return f"{_in_slot_of(stream)}:waiting"

    def wait_shapes(self, stream: str, event_type: str) -> str:
        """The match shapes waits on events of ``event_type`` use (a hash: the sorted field
        names, joined by a space -> how many waits use it): a worker reads it once per batch
        per type to know which index sets an event could be in."""
        return f"{_in_slot_of(stream)}:wait-shapes:{event_type}"

    def awaited_types(self, stream: str) -> str:
        """Every event type a run on ``stream`` has waited for (a set, never trimmed: one
        name per type): an event of such a type that no agent takes is an answer, acked
        even when it answers nothing (a late or repeated answer), not dead-lettered."""
        return f"{_in_slot_of(stream)}:awaited-types"

    def wait_index(self, stream: str, digest: str) -> str:
        """The waits one exact match is waiting for: a set of event hashes, named by the
        digest of (type, fields, values) (``workers/core/matching.py``)."""
        return f"{_in_slot_of(stream)}:wait-on:{digest}"

    @property
    def delayed_streams(self) -> str:
        """A set of every stream that has had delayed events, so the timer finds their
        sorted sets without a SCAN (never trimmed: one name per stream)."""
        return f"{self.prefix}timers:delayed"

    def schedule_ticks(self, stream: str) -> str:
        """The last tick of each schedule published to ``stream`` (a hash: schedule name ->
        tick, epoch ms), in the stream's slot: one script checks it and XADDs the tick's
        event, so a tick is published once however many timers race (workers/timers)."""
        return f"{_in_slot_of(stream)}:schedules"

    def retention(self, stream: str) -> str:
        """The stream's last trim by retention (a hash: when, by whom, the settings it used,
        what it cut, what held it back, when the next is due; workers/retention). In the
        stream's slot: one script checks the turn, trims and records."""
        return f"{_in_slot_of(stream)}:retention"

    def error_groups(self, stream: str) -> str:
        """The error groups of ``stream``'s dead letters (a hash: fingerprint -> the group's
        record as JSON; workers/redis/lua/error_groups.lua), written by the script that
        writes the letter. In the dead stream's slot (braced when it has no hash tag)."""
        return f"{_in_slot_of(dead_stream(stream))}:errors"

    def error_members(self, stream: str, fingerprint: str) -> str:
        """One error group's dead-letter ids (the sequence padded to 20 digits), scored by
        when each was written (ms). The scripts build it as ``error_groups`` + ``:`` +
        fingerprint."""
        return f"{self.error_groups(stream)}:{fingerprint}"

    def error_backfilled(self, stream: str) -> str:
        """The fingerprints of letters written before letters carried one (a hash: dead id
        -> fingerprint; ``manage.py errors --backfill``), so a redrive or purge takes them
        out of their group; each field goes with its letter."""
        return f"{_in_slot_of(dead_stream(stream))}:fingerprints"

    @property
    def timers_lease(self) -> str:
        """Held by the one process that runs the fleet's timer (moves due delayed events,
        publishes schedule ticks); a key with an expiry, renewed while it works."""
        return f"{self.prefix}timers:lease"

    @property
    def timers_channel(self) -> str:
        """Pub/sub channel that wakes the timer early: a publisher says when a delayed event
        became the first due of its stream; a timer says when it stops. Only a wake-up: the
        sorted sets are the truth."""
        return f"{self.prefix}timers:wake"

    def flow_entries(self, stream: str, group: str) -> str:
        """Flow control (workers/flow): each keyed entry of the group, by id, with its key's
        queue and limit (``<limit>TAB<queue key>``), from its first read until it is acked."""
        return f"{self.prefix}flow:{stream}:{group}:entries"

    def flow_queue(self, stream: str, group: str, event_type: str, key_value: str) -> str:
        """One key's queue: a sorted set of its unsettled entries in publish order; the first
        ``concurrency`` may run. The read script builds the name (``workers/flow``)."""
        return f"{self.prefix}flow:{stream}:{group}:q:{event_type}:{key_value}"

    def flow_index(self, stream: str, group: str) -> str:
        """The group's non-empty key queues, scored by when each last took an entry (ms):
        the console lists keys from it, never by SCAN."""
        return f"{self.prefix}flow:{stream}:{group}:keys"

    def retired_history(self, resolution: str) -> str:
        """Where the console's sampler kept its history (``1s``, ``1m``) before the recorder;
        nothing reads or writes it now: the recorder that takes the lease deletes it."""
        return f"{self.prefix}console:history:{resolution}"

    @property
    def history_recorder(self) -> str:
        """Which process records the history (runworker or console; a key with a short expiry)."""
        return f"{self.prefix}{{history}}:recorder"

    @property
    def console_broadcaster(self) -> str:
        """Which console process broadcasts the live fragments (a key with a short expiry)."""
        return f"{self.prefix}console:broadcaster"

    def console_preview(self, user_id: int) -> str:
        """Held while one user's dead-letter preview runs (one at a time per user)."""
        return f"{self.prefix}console:preview:{user_id}"

    def budget(self, name: str) -> str:
        """One rate budget's token bucket (a hash: tokens, ts in server ms, taken, deferrals;
        workers/runtime/ratelimit.py). The name is the cluster hash tag: one script reads the bucket
        and its held set, so both live in one slot."""
        return f"{self.prefix}budget:{{{name}}}"

    def budget_held(self, name: str) -> str:
        """Events holding a reserved token of budget ``name`` (a sorted set: event hash -> when
        its token is due, ms), beside its bucket."""
        return f"{self.budget(name)}:held"

    def budget_keys(self, name: str) -> str:
        """The live keyed buckets of budget ``name`` (a sorted set: bucket, e.g. ``github:42``
        -> when its keys expire, server ms), so the console counts them without a SCAN."""
        return f"{self.budget(name)}:keys"

    @property
    def channels(self) -> str:
        """The prefix of the console's channel-layer keys and pub/sub channels (channels-redis)."""
        return f"{self.prefix}channels"

    def sign_in_failures(self, scope: str, who: str) -> str:
        """Failed sign-ins in the current throttle window (a counter with an expiry):
        ``scope`` is ``user``, ``address`` or ``token``, ``who`` a digest of the name. In one
        cluster slot: one transaction counts a failure against a user and an address."""
        return f"{self.prefix}{{throttle}}:{scope}:{who}"
