"""The errors Streamdesk raises: one root, specific subclasses, causes kept."""

from __future__ import annotations


class StreamdeskError(Exception):
    """Root of every error Streamdesk raises on purpose."""


class ConfigurationError(StreamdeskError):
    """A setting or option has a value the engine cannot work with."""


class RedisUnavailable(StreamdeskError):
    """The Redis server cannot be reached (or the embedded one could not start)."""


class NotReplicated(RedisUnavailable):
    """A durable publish reached the primary, but fewer replicas than asked confirmed it in
    time: it could still be lost if the primary failed now. Publish again (the idempotency
    gate runs the event once however many copies arrive)."""


class RedisTooOld(StreamdeskError):
    """The server lacks a command the engine needs (XAUTOCLAIM: Redis >= 6.2)."""


class EventError(StreamdeskError):
    """An event cannot be published or processed; ``reason`` is a stable slug."""

    reason = "invalid-event"


class EventDecodeError(EventError):
    """A stream entry is not a JSON object in an ``event`` field."""

    reason = "decode-error"


class EventTooLarge(EventError):
    """An event is larger than ``max_event_bytes``."""

    reason = "too-large"


class InvalidEnvelope(EventError):
    """The envelope misses ``type``/``data`` or has a field of the wrong type."""

    reason = "invalid-envelope"


class UnknownEventType(EventError):
    """No agent is registered for the event's type."""

    reason = "unknown-type"


class InvalidEventData(EventError):
    """``data`` does not match the schema registered for the type."""

    reason = "invalid-data"


class GateFenced(StreamdeskError):
    """A worker's lease was taken over: its result must not be committed."""


class ActionRefused(StreamdeskError):
    """An operator action was refused because doing it would lose work; nothing changed."""


class NoSuchGroup(ActionRefused):
    """An action named a stream or consumer group that does not exist; nothing changed."""

    def __init__(self, stream: str, group: str) -> None:
        super().__init__(f"no group {group!r} on stream {stream!r}")
        self.stream = stream
        self.group = group


class InvalidAction(StreamdeskError):
    """An operator action was given input it cannot take; ``field`` names the input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NotAClaimTarget(InvalidAction):
    """A claim named a consumer that may not take entries (no runworker heartbeat)."""

    def __init__(self, message: str) -> None:
        super().__init__("consumer", message)


class JobNotRunnable(StreamdeskError):
    """A bulk job is finished, or another runner holds its lease."""


class ActionFailed(StreamdeskError):
    """An operator action failed part way; its audit record says what was done before."""


class WebhookError(StreamdeskError):
    """A webhook delivery was refused; nothing was published."""


class SignatureInvalid(WebhookError):
    """The signature is missing, malformed, wrong, or its timestamp is outside the window."""


class PayloadInvalid(WebhookError):
    """The body is not UTF-8 JSON, nests too deep, or does not map to a valid event."""


class StepError(StreamdeskError):
    """A durable step cannot be stored (its result is not JSON, its name is invalid)."""


class LeaseLost(StreamdeskError):
    """Another attempt took this event over: this one may not store steps or commit."""


class NonRetriable(StreamdeskError):
    """Raised by an agent whose failure no retry can mend (bad input, a permission refused):
    its event is dead-lettered at once with reason ``non-retriable``, whatever deliveries
    are left. ``raise NonRetriable("no such order") from exc`` keeps the cause."""


class AgentTimeout(StreamdeskError):
    """An agent ran past its ``timeout_s``: the attempt fails with reason ``timeout``."""


class RetryAfter(StreamdeskError):
    """Raised by an agent or a tool when a service said when to come back (an HTTP 429 or
    503 with Retry-After that is not an ``httpx``/``requests``/``openai`` error, which the
    engine reads by itself): the event waits ``retry_after_s`` without spending a delivery,
    if that is within its retry policy's ``retry_after_max_s``."""

    def __init__(self, retry_after_s: float, message: str = "") -> None:
        super().__init__(message or f"asked to retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


class Deferred(BaseException):
    """Raised by ``ctx.tool`` when a rate budget is spent: the engine releases the event and
    reruns it when its reserved token is due. Not an error, so it is not counted as a failure
    or a delivery; a ``BaseException`` so an agent's ``except Exception`` cannot swallow it."""

    def __init__(self, budget: str, wait_ms: int) -> None:
        super().__init__(f"rate budget {budget!r} spent; next token in {wait_ms} ms")
        self.budget = budget
        self.wait_ms = wait_ms


class Suspended(BaseException):
    """Raised by ``ctx.sleep`` / ``ctx.wait_for_event`` once the wait is written down: the
    engine acks the entry and releases the lease, and the run gives back its slot until the
    wait ends (workers/waits/). A ``BaseException``, like ``Deferred``, so an agent's
    ``except Exception`` cannot swallow it. ``waits_for``: what the timeline says."""

    def __init__(self, waits_for: str, until_ms: int) -> None:
        super().__init__(waits_for)
        self.waits_for = waits_for
        self.until_ms = until_ms


class InvalidSchedule(ConfigurationError):
    """A schedule cannot be used: a cron expression that does not parse or never fires, an
    unknown time zone, a missing event type (workers/timers)."""


class InvalidDelay(EventError):
    """``publish(delay_s=...)`` or ``at=`` is not a time to publish at: negative, not a
    number, a naive datetime, or both given. Nothing was written."""

    reason = "invalid-delay"
