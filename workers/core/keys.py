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

    def sweep(self, stream: str, group: str) -> str:
        """Held by the worker that sweeps the group's pending entries next; it expires when
        the next sweep is due (workers/engine/sweep.py): one sweep per group for the fleet."""
        return f"{self.prefix}sweep:{stream}:{group}"

    def waits(self, stream: str, group: str) -> str:
        """When each entry held back on purpose (a retry's backoff, a rate budget's token, a
        duplicate waiting on its twin's lease) is due again: a sorted set of entry ids scored
        by due time (ms). The engine keeps that wait as an idle time nobody can read back."""
        return f"{self.prefix}waits:{stream}:{group}"

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

    @property
    def channels(self) -> str:
        """The prefix of the console's channel-layer keys and pub/sub channels (channels-redis)."""
        return f"{self.prefix}channels"

    def sign_in_failures(self, scope: str, who: str) -> str:
        """Failed sign-ins in the current throttle window (a counter with an expiry):
        ``scope`` is ``user``, ``address`` or ``token``, ``who`` a digest of the name. In one
        cluster slot: one transaction counts a failure against a user and an address."""
        return f"{self.prefix}{{throttle}}:{scope}:{who}"
