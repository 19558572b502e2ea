"""Outcomes the database refuses never stop a worker: the refused one is dead-lettered with
reason ``unstorable``, the rest of its batch commits, and transient errors are retried."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis
from django.db import connection, connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.engine import STREAM, AnyData, counters, pending, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.models import AgentRun, RunStatus, TimelineStep

pytestmark = pytest.mark.django_db(transaction=True)

DEAD = f"{STREAM}:dead"


def returning(
    results: dict[str, Any],
    errors: dict[str, str] | None = None,
    raises: dict[str, type[BaseException]] | None = None,
) -> Registry:
    """An agent that returns ``results[event id]`` or raises ``errors[event id]``, as a
    RuntimeError or as the class ``raises[event id]``."""
    registry = Registry()

    async def agent(event: Any, ctx: Any) -> Any:
        if errors and event.id in errors:
            raise (raises or {}).get(event.id, RuntimeError)(errors[event.id])
        return results[event.id]

    registry.register("test.result", AnyData, agent)
    return registry


def publish(r: redis.Redis, ids: list[str]) -> None:
    for event_id in ids:
        xadd(r, {"type": "test.result", "source": "t", "id": event_id, "data": {}})


def dead_letters(r: redis.Redis) -> dict[str, dict[str, str]]:
    """Dead letters by the event id of their event."""
    return {json.loads(f["event"])["id"]: f for _, f in r.xrange(DEAD)}


def test_unstorable_result_is_dead_lettered_and_its_batch_commits(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    ids = [f"e{i}" for i in range(12)]
    results: dict[str, Any] = {i: {"n": i} for i in ids}
    results["e5"] = {"x": float("nan")}  # JSON has no NaN: neither database takes it
    publish(r, ids)

    run_burst(redis_url, config, returning(results), timeout_s=20)

    assert pending(r) == 0
    letters = dead_letters(r)
    assert list(letters) == ["e5"]
    assert letters["e5"]["reason"] == "unstorable"
    assert "NaN or Infinity" in letters["e5"]["error"]
    rows = {row.event_id: row for row in AgentRun.objects.all()}
    assert rows["e5"].status == RunStatus.DEAD and rows["e5"].error.startswith("unstorable: ")
    assert rows["e5"].result is None
    good = [rows[i] for i in ids if i != "e5"]
    assert {row.status for row in good} == {RunStatus.SUCCEEDED}
    assert [row.result for row in good] == [{"n": i} for i in ids if i != "e5"]
    stats = counters(r)
    assert (stats["processed"], stats["dead_lettered"]) == (11, 1)


def test_nul_in_an_error_text_is_stored_escaped_and_the_event_retried(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    publish(r, ["boom"])
    run_burst(redis_url, config, returning({}, {"boom": "boom \x00 here"}), timeout_s=20)

    assert pending(r) == 0
    row = AgentRun.objects.get()
    assert (row.status, row.attempts) == (RunStatus.DEAD, config.max_deliveries)
    assert "boom \\x00 here" in row.error
    letter = dead_letters(r)["boom"]
    # Redis keeps the exact text; only the database column needed the escape.
    assert letter["reason"] == "max-deliveries" and "boom \x00 here" in letter["error"]


def test_nul_in_a_result_never_stops_a_worker(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    publish(r, ["a", "b"])
    run_burst(redis_url, config, returning({"a": {"s": "x\x00y"}, "b": "fine"}), timeout_s=20)

    assert pending(r) == 0
    rows = {row.event_id: row for row in AgentRun.objects.all()}
    assert (rows["b"].status, rows["b"].result) == (RunStatus.SUCCEEDED, "fine")
    if connection.vendor == "postgresql":  # jsonb has no NUL: the database refuses it
        assert rows["a"].status == RunStatus.DEAD
        assert dead_letters(r)["a"]["reason"] == "unstorable"
    else:  # SQLite stores the \u0000 escape
        assert (rows["a"].status, rows["a"].result) == (RunStatus.SUCCEEDED, {"s": "x\x00y"})


def test_raw_entry_with_nan_is_dead_lettered_at_intake(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, '{"type": "test.result", "source": "t", "id": "nan", "data": {"n": NaN}}')
    run_burst(redis_url, config, returning({"nan": "never"}), timeout_s=20)

    assert pending(r) == 0 and AgentRun.objects.count() == 0
    (letter,) = (f for _, f in r.xrange(DEAD))
    assert letter["reason"] == "decode-error" and "NaN" in letter["error"]


def test_raw_entry_with_nul_in_its_subject_is_dead_lettered_at_intake(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, {"type": "test.result", "id": "nul", "subject": "a\x00b", "data": {}})
    run_burst(redis_url, config, returning({"nul": "never"}), timeout_s=20)

    assert pending(r) == 0 and AgentRun.objects.count() == 0
    letter = dead_letters(r)["nul"]
    assert letter["reason"] == "invalid-envelope" and "subject" in letter["error"]


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_a_locked_database_is_waited_out_not_dead_lettered(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """SQLite's "database is locked" is transient: the settler backs off and retries."""
    options = connections["default"].settings_dict["OPTIONS"]
    timeout, options["timeout"] = options["timeout"], 0.05
    path = str(connections["default"].settings_dict["NAME"])
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # holds the write lock
    released = threading.Timer(1.5, lambda: blocker.execute("COMMIT"))
    publish(r, ["locked"])
    started = time.monotonic()
    try:
        released.start()
        run_burst(redis_url, config, returning({"locked": "ok"}), timeout_s=30)
    finally:
        released.join()
        blocker.close()
        options["timeout"] = timeout
    assert time.monotonic() - started >= 1.5
    row = AgentRun.objects.get()
    assert (row.status, row.result, row.attempts) == (RunStatus.SUCCEEDED, "ok", 1)
    assert r.xlen(DEAD) == 0 and pending(r) == 0


@contextlib.contextmanager
def insert_trigger(name: str, action: str) -> Iterator[Callable[[], int]]:
    """A PostgreSQL trigger on every AgentRun insert that runs ``action`` while the sequence
    ``<name>_calls`` (it counts each insert and survives rollbacks) is below a bound the
    action names as ``calls``; yields a function that reads how often it fired."""
    table = AgentRun._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE SEQUENCE {name}_calls")
        cursor.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger AS $$ DECLARE calls bigint; BEGIN "
            f"calls := nextval('{name}_calls'); {action} RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        cursor.execute(
            f"CREATE TRIGGER {name} BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()"
        )

    def fired() -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT last_value FROM {name}_calls")
            row = cursor.fetchone()
        return int(row[0]) if row else 0

    try:
        yield fired
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER {name} ON {table}")
            cursor.execute(f"DROP FUNCTION {name}()")
            cursor.execute(f"DROP SEQUENCE {name}_calls")


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_a_serialization_failure_is_retried_not_dead_lettered(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """PostgreSQL's SQLSTATE 40001 is transient: the batch is written again after a backoff.
    A trigger refuses the first two inserts (a sequence counts: it survives the rollback)."""
    refuse = (
        "IF calls <= 2 THEN RAISE EXCEPTION 'could not serialize access' "
        "USING ERRCODE = '40001'; END IF;"
    )
    publish(r, ["flaky"])
    with insert_trigger("sd_refuse_twice", refuse):
        run_burst(redis_url, config, returning({"flaky": "ok"}), timeout_s=30)
    row = AgentRun.objects.get()
    assert (row.status, row.result, row.attempts) == (RunStatus.SUCCEEDED, "ok", 1)
    assert r.xlen(DEAD) == 0 and pending(r) == 0


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_one_refused_row_in_a_postgresql_batch_statement_dead_letters_only_it(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """PostgreSQL writes a batch's rows in one statement: a row it refuses (jsonb has no
    NUL) fails the whole statement, the batch is halved until that row is alone, and every
    other event of the batch commits once."""
    ids = [f"e{i}" for i in range(40)]
    results: dict[str, Any] = {i: {"n": i} for i in ids}
    results["e17"] = {"s": "x\x00y"}
    publish(r, ids)
    run_burst(redis_url, replace(config, batch_size=50), returning(results), timeout_s=30)

    rows = {row.event_id: row for row in AgentRun.objects.all()}
    assert len(rows) == 40 and pending(r) == 0
    assert rows.pop("e17").status == RunStatus.DEAD
    assert dead_letters(r)["e17"]["reason"] == "unstorable"
    assert {row.status for row in rows.values()} == {RunStatus.SUCCEEDED}
    assert {row.attempts for row in rows.values()} == {1}
    assert TimelineStep.objects.filter(kind="committed").count() == 0  # happy path: no rows


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_a_connection_lost_in_the_middle_of_a_batch_is_reconnected_and_retried(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """The server ends the worker's connection while its batch statement runs (a trigger
    terminates its own backend, once): the batch is written again on a new connection,
    each event succeeds once, nothing is dead-lettered."""
    kill = "IF calls = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;"
    ids = [f"k{i}" for i in range(30)]
    publish(r, ids)
    with insert_trigger("sd_kill_once", kill) as fired:
        run_burst(redis_url, config, returning({i: i for i in ids}), timeout_s=60)
        kills = (fired(),)
    assert kills is not None and kills[0] >= 1  # the connection was really lost
    rows = AgentRun.objects.all()
    assert rows.count() == 30
    assert {(row.status, row.attempts) for row in rows} == {(RunStatus.SUCCEEDED, 1)}
    assert r.xlen(DEAD) == 0 and pending(r) == 0


# Any code point, surrogates included, and NUL often.
TEXTS = st.text(st.characters(exclude_categories=()) | st.sampled_from(["\x00", "\ud800"]))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
    max_leaves=6,
)


def _subclasses(cls: type[BaseException]) -> set[type[BaseException]]:
    return {cls}.union(*(_subclasses(sub) for sub in cls.__subclasses__()))


def _raisable(cls: type[BaseException]) -> bool:
    try:
        cls("text")
    except Exception:
        return False  # UnicodeError's kind, exception groups: no one-message form
    return True


# Every built-in BaseException an agent can raise with a message (SystemExit, KeyboardInterrupt,
# GeneratorExit, StopIteration ... and the Exceptions), and asyncio's CancelledError.
RAISABLE = sorted(
    {c for c in _subclasses(BaseException) if c.__module__ == "builtins" and _raisable(c)}
    | {asyncio.CancelledError},
    key=lambda c: c.__name__,
)
OUTCOMES = st.lists(
    st.tuples(st.sampled_from(["result", "error"]), JSON_VALUES, TEXTS, st.sampled_from(RAISABLE)),
    min_size=1,
    max_size=10,
)


def _plain(value: Any) -> bool:
    """Storable by both databases: no NaN or Infinity, no NUL, no lone surrogate."""
    text = json.dumps(value, ensure_ascii=False)
    if "\x00" in text or "\\u0000" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return False
    return not any(isinstance(v, float) and not math.isfinite(v) for v in _leaves(value))


def _same(stored: Any, given: Any) -> bool:
    """Equal, but for numbers as jsonb gives them back (decimal: 2.0e16 reads as an int)."""
    if isinstance(given, float) and isinstance(stored, int | float):
        return math.isclose(stored, given, rel_tol=1e-15)
    if isinstance(given, dict) and isinstance(stored, dict):
        return stored.keys() == given.keys() and all(_same(stored[k], v) for k, v in given.items())
    if isinstance(given, list) and isinstance(stored, list):
        return len(stored) == len(given) and all(map(_same, stored, given))
    return bool(stored == given and type(stored) is type(given))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(outcomes=OUTCOMES)
def test_random_results_and_error_texts_never_stop_a_worker(
    r: redis.Redis,
    redis_url: str,
    config: EngineConfig,
    outcomes: list[tuple[str, Any, str, type[BaseException]]],
) -> None:
    """Results of any JSON shape, and failures of any class with any text (lone surrogates
    and NUL included), on both databases: each event settles, none holds the worker."""
    r.flushdb()
    AgentRun.objects.all().delete()
    TimelineStep.objects.all().delete()
    ids = [f"p{i}" for i in range(len(outcomes))]
    results = {i: value for i, (kind, value, _, _) in zip(ids, outcomes, strict=True)}
    errors = {i: o[2] for i, o in zip(ids, outcomes, strict=True) if o[0] == "error"}
    raises = {i: o[3] for i, o in zip(ids, outcomes, strict=True) if o[0] == "error"}
    publish(r, ids)

    run_burst(redis_url, replace(config, max_deliveries=1), returning(results, errors, raises), 30)

    assert pending(r) == 0
    rows = {row.event_id: row for row in AgentRun.objects.all()}
    letters = dead_letters(r)
    for i in ids:
        if i in errors:
            assert rows[i].status == RunStatus.DEAD and letters[i]["reason"] == "max-deliveries"
            name = raises[i].__name__
            assert name in letters[i]["error"] and name in rows[i].error
        elif rows[i].status == RunStatus.SUCCEEDED:
            assert _same(rows[i].result, json.loads(json.dumps(results[i])))
        else:
            assert not _plain(results[i]), f"{results[i]!r} was refused"
            assert rows[i].status == RunStatus.DEAD and letters[i]["reason"] == "unstorable"


@pytest.mark.parametrize(
    "value", [{"\ud800": 1}, {"at": object()}], ids=["surrogate-key", "object"]
)
def test_a_result_with_no_json_form_is_unstorable_not_retried(
    r: redis.Redis, redis_url: str, config: EngineConfig, value: Any
) -> None:
    publish(r, ["odd"])
    runs: list[str] = []
    registry = Registry()

    async def agent(event: Any, ctx: Any) -> Any:
        runs.append(event.id)
        return value

    registry.register("test.result", AnyData, agent)
    run_burst(redis_url, config, registry, timeout_s=20)

    assert runs == ["odd"] and pending(r) == 0
    letter = dead_letters(r)["odd"]
    assert letter["reason"] == "unstorable" and "the result is not JSON" in letter["error"]
    assert AgentRun.objects.get().status == RunStatus.DEAD
