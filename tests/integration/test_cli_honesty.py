"""The command line says what happened (issue 14 item 9): exit status 1 when nothing was done,
a missing group in words, refused and no-op actions audited as such, the embedded server's
start said once."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import redis
from django.core.management import CommandError, call_command

from tests.support.entries import GROUP, OUTCOME_KEYS, STREAM, dead_letters, pending_entries
from workers.models import AuditRecord
from workers.redis.embedded import EmbeddedValkey

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
NO_GROUP = f"no group 'nope' on stream '{STREAM}'"


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused_with_code(*args: str) -> tuple[CommandError, str]:
    """The CommandError an action ended with, and what it printed before."""
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(*args, stdout=out, stderr=StringIO())
    return caught.value, out.getvalue()


def outcomes() -> list[str]:
    return list(AuditRecord.objects.order_by("id").values_list("outcome", flat=True))


# -- nothing done: exit status 1, audited as noop ----------------------------------------------


def test_retry_of_an_id_not_pending_exits_1_and_is_audited_as_noop(r: redis.Redis) -> None:
    pending_entries(r, 1)
    error, out = refused_with_code("retry", "9-9")
    assert error.returncode == 1
    assert str(error) == "retry: nothing done (1 not pending)"
    assert out.startswith(f"retry on {STREAM} group {GROUP}: noop, 0 done, 1 skipped")
    assert outcomes() == ["noop"]


def test_json_output_is_the_outcome_object_when_nothing_is_done(r: redis.Redis) -> None:
    pending_entries(r, 1)
    error, out = refused_with_code("deadletter", "9-9", "--reason", "x", "--json")
    data = json.loads(out)
    assert (data["outcome"], data["count"], data["skipped"], error.returncode) == ("noop", 0, 1, 1)
    assert set(data) == OUTCOME_KEYS


def test_some_done_some_skipped_exits_0(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    out, _ = run("retry", ids[0], "9-9")
    assert f"{GROUP}: ok, 1 done, 1 skipped" in out
    assert outcomes() == ["ok"]


def test_pause_of_a_paused_group_is_a_noop(r: redis.Redis) -> None:
    pending_entries(r, 1)
    run("pause")
    error, out = refused_with_code("pause")
    assert error.returncode == 1 and "already paused by cli:" in out
    run("resume")
    error, _ = refused_with_code("resume")
    assert error.returncode == 1 and "was not paused" in str(error)
    assert outcomes() == ["ok", "noop", "ok", "noop"]


def test_redrive_and_purge_of_letters_already_gone_exit_1(r: redis.Redis) -> None:
    [letter] = dead_letters(r, 1)
    run("purge", letter, "--reason", "junk")
    for args in (("redrive", letter), ("purge", letter, "--reason", "again")):
        error, _ = refused_with_code(*args)
        assert error.returncode == 1
    assert outcomes() == ["ok", "noop", "noop"]


def test_a_filter_that_matches_nothing_exits_1_and_is_audited_as_noop(r: redis.Redis) -> None:
    dead_letters(r, 2)
    error, out = refused_with_code("redrive", "--all", "--type", "no.such.type")
    assert error.returncode == 1 and "noop, 0 done" in out
    assert outcomes() == ["noop"]
    run("redrive", "--all")  # one that matches is ok, exit 0
    assert outcomes() == ["noop", "ok"]


def test_dry_run_of_nothing_exits_0(r: redis.Redis) -> None:
    pending_entries(r, 1)
    out, _ = run("retry", "9-9", "--dry-run")
    assert "dry-run, would act on 0" in out


def test_the_real_command_exits_1_with_its_json_on_stdout(
    r: redis.Redis, worker_env: dict[str, str]
) -> None:
    pending_entries(r, 1)
    done = subprocess.run(
        [sys.executable, "manage.py", "retry", "9-9", "--json"],
        cwd=ROOT,
        env=worker_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["outcome"] == "noop"
    assert done.stderr.strip() == "CommandError: retry: nothing done (1 not pending)"


def test_every_action_commands_help_says_when_it_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for command in ("claim", "retry", "deadletter", "redrive", "purge", "pause", "resume"):
        with pytest.raises(SystemExit):
            call_command(command, "--help")
        said = " ".join(capsys.readouterr().out.split())
        assert "Exits 1 when nothing was done" in said, command


# -- a missing stream or group, in words ---------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("retry", "1-0"),
        ("retry", "1-0", "--dry-run"),
        ("deadletter", "1-0", "--reason", "x"),
        ("claim", "1-0", "--to", "x", "--create"),
        ("claim", "1-0", "--to", "x"),
        ("claim", "--all-of", "a", "--to", "b", "--create", "--dry-run"),
        ("claim", "--remove-consumer", "x"),
    ],
)
def test_a_missing_group_is_said_in_words(r: redis.Redis, args: tuple[str, ...]) -> None:
    pending_entries(r, 1)
    error, _ = refused_with_code(*args, "--group", "nope")
    assert str(error) == NO_GROUP
    record = AuditRecord.objects.get()
    assert (record.outcome, record.detail) == ("refused", NO_GROUP)


def test_a_missing_stream_is_said_in_words(r: redis.Redis) -> None:
    error, _ = refused_with_code("retry", "1-0", "--stream", "nowhere", "--group", "nope")
    assert str(error) == "no group 'nope' on stream 'nowhere'"


# -- publish and the embedded server --------------------------------------------------------------


def test_publish_says_once_that_it_started_the_embedded_valkey(
    worker_env: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in worker_env.items() if k != "REDIS_URL"}
    env["STREAMDESK_DATA_DIR"] = str(tmp_path / "data")
    server = EmbeddedValkey(tmp_path / "data")
    try:
        first, second = (
            subprocess.run(
                [sys.executable, "manage.py", "publish", "demo.echo", "--data", '{"n": 1}'],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            for _ in range(2)
        )
        assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
        said = f"started the embedded Valkey at {server.url} (no REDIS_URL set)"
        assert first.stderr.splitlines() == [said]
        assert second.stderr == ""
        assert len(first.stdout.split()) == 1 and len(second.stdout.split()) == 1
    finally:
        server.stop()
