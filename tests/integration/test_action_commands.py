"""The operator-action commands: thin doors onto workers/operations/__init__.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from tests.support.entries import GROUP, STREAM, dead_letters, pending_entries
from workers.core.keys import Keys, dead_stream
from workers.management.actioncli import parse_time_ms
from workers.models import ApiToken, AuditRecord, BulkJob
from workers.operations.tokens import hash_token

pytestmark = pytest.mark.django_db

DEAD = dead_stream(STREAM)
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def run_json(*args: str) -> Any:
    return json.loads(run(*args, "--json")[0])


def test_claim_json_is_one_outcome_object(r: redis.Redis) -> None:
    ids = pending_entries(r, 2)
    data = run_json("claim", *ids, "--to", "new", "--create")
    assert data == {
        "action": "claim",
        "stream": STREAM,
        "group": GROUP,
        "count": 2,
        "skipped": 0,
        "outcome": "ok",
        "ids": ids,
        "new_ids": [],
        "detail": "",
        "job_id": None,
        "audit_id": AuditRecord.objects.get().pk,
    }


def test_claim_records_the_cli_door_and_the_user_at_host(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    run("claim", *ids, "--to", "new", "--create")
    record = AuditRecord.objects.get()
    assert record.door == "cli"
    assert record.actor.startswith("cli:") and "@" in record.actor


def test_claim_dry_run_changes_nothing(r: redis.Redis) -> None:
    ids = pending_entries(r, 2)
    data = run_json("claim", *ids, "--to", "new", "--create", "--dry-run")
    assert (data["outcome"], data["count"]) == ("dry-run", 2)
    rows = r.xpending_range(STREAM, GROUP, min="-", max="+", count=10)
    assert {row["consumer"] for row in rows} == {"old"}


def test_claim_all_of_a_consumer(r: redis.Redis) -> None:
    pending_entries(r, 3, consumer="gone")
    out, _ = run("claim", "--all-of", "gone", "--to", "live", "--create")
    assert out.startswith(f"claim-all on {STREAM} group {GROUP}: ok, 3 done")


def test_claim_remove_consumer_refused_exits_with_the_reason(r: redis.Redis) -> None:
    pending_entries(r, 1, consumer="busy")
    with pytest.raises(CommandError, match="pending"):
        run("claim", "--remove-consumer", "busy")
    assert AuditRecord.objects.get().outcome == "refused"


def test_retry_text_output_names_the_audit_record(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    out, _ = run("retry", *ids)
    assert f"[audit #{AuditRecord.objects.get().pk}]" in out


def test_deadletter_without_a_reason_is_an_error(r: redis.Redis) -> None:
    ids = pending_entries(r, 1)
    with pytest.raises(CommandError, match="--reason"):
        run("deadletter", *ids)
    assert not AuditRecord.objects.exists()


def test_deadletter_moves_entries(r: redis.Redis) -> None:
    ids = pending_entries(r, 2)
    data = run_json("deadletter", *ids, "--reason", "poison")
    assert (data["outcome"], data["count"], r.xlen(DEAD)) == ("ok", 2, 2)


def test_redrive_ids_prints_the_new_entry_ids(r: redis.Redis) -> None:
    dead = dead_letters(r, 2)
    out, _ = run("redrive", *dead)
    new_ids = [line.strip() for line in out.splitlines()[1:]]
    assert new_ids == [entry_id for entry_id, _ in r.xrange(STREAM)]


def test_redrive_filter_runs_its_job_in_the_foreground(r: redis.Redis) -> None:
    dead_letters(r, 30, kind="demo.echo")
    dead_letters(r, 20, kind="demo.fail", first=30)
    out, err = run("redrive", "--type", "demo.fail", "--json")
    data = json.loads(out)
    job = BulkJob.objects.get()
    assert (data["outcome"], data["count"], data["job_id"], job.status) == (
        "ok",
        20,
        job.pk,
        "done",
    )
    assert f"job #{job.pk} redrive: 20 done" in err
    assert (r.xlen(STREAM), r.xlen(DEAD)) == (20, 30)


def test_redrive_background_only_queues_the_job(r: redis.Redis) -> None:
    dead_letters(r, 5)
    data = run_json("redrive", "--all", "--background")
    assert (data["outcome"], BulkJob.objects.get().status) == ("queued", "queued")
    assert r.xlen(DEAD) == 5


def test_redrive_without_ids_or_filter_is_an_error(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="ids or a filter"):
        run("redrive")


def test_redrive_filter_dry_run_previews(r: redis.Redis) -> None:
    dead_letters(r, 4)
    data = run_json("redrive", "--all", "--dry-run")
    assert (data["outcome"], data["count"], data["job_id"]) == ("dry-run", 4, None)
    assert r.xlen(DEAD) == 4 and not BulkJob.objects.exists()


def test_purge_by_letter_reason_needs_and_records_a_reason(r: redis.Redis) -> None:
    dead_letters(r, 3, reason="decode-error")
    dead_letters(r, 2, reason="max-deliveries", first=3)
    data = run_json("purge", "--letter-reason", "decode-error", "--reason", "junk")
    assert (data["outcome"], data["count"], r.xlen(DEAD)) == ("ok", 3, 2)
    assert AuditRecord.objects.get(action="purge").reason == "junk"


def test_pause_and_resume(r: redis.Redis) -> None:
    assert run_json("pause")["count"] == 1
    assert r.exists(Keys().paused(STREAM, GROUP))
    assert run_json("resume")["count"] == 1
    assert not r.exists(Keys().paused(STREAM, GROUP))


def test_rerun_of_an_unknown_event_exits_with_the_refusal(r: redis.Redis) -> None:
    with pytest.raises(CommandError, match="no run"):
        run("rerun", "b" * 64, "--reason", "why")


def test_jobs_lists_newest_first_as_json(r: redis.Redis) -> None:
    dead_letters(r, 3)
    run("redrive", "--all", "--background")
    run("purge", "--all", "--reason", "x", "--background")
    listed = run_json("jobs")
    assert [(j["action"], j["status"]) for j in listed] == [
        ("purge", "queued"),
        ("redrive", "queued"),
    ]


def test_jobs_cancel_stops_a_queued_job(r: redis.Redis) -> None:
    dead_letters(r, 3)
    job_id = run_json("redrive", "--all", "--background")["job_id"]
    data = run_json("jobs", "--cancel", str(job_id))
    assert (data["action"], data["outcome"]) == ("cancel-job", "ok")
    assert BulkJob.objects.get().status == "cancelled"


def test_jobs_run_runs_a_queued_job_here(r: redis.Redis) -> None:
    dead_letters(r, 3)
    job_id = run_json("redrive", "--all", "--background")["job_id"]
    data = run_json("jobs", "--run", str(job_id))
    assert (data["outcome"], data["count"]) == ("ok", 3)


def test_jobs_run_of_an_ended_job_is_an_error(r: redis.Redis) -> None:
    dead_letters(r, 1)
    job_id = run_json("redrive", "--all")["job_id"]
    with pytest.raises(CommandError, match="already ended"):
        run("jobs", "--run", str(job_id))


def test_since_and_until_take_iso_times_or_epoch_ms() -> None:
    assert parse_time_ms("1767225600000", "--since") == 1767225600000
    assert parse_time_ms("2026-01-01T00:00:00", "--since") == 1767225600000
    assert parse_time_ms("2026-01-01T01:00:00+01:00", "--since") == 1767225600000
    with pytest.raises(CommandError, match="--since"):
        parse_time_ms("yesterday", "--since")


# -- apitoken ------------------------------------------------------------------------------


@pytest.fixture
def alice() -> Any:
    return get_user_model().objects.create_user("alice")


def test_apitoken_create_prints_the_token_once_and_stores_its_hash(alice: Any) -> None:
    out, err = run("apitoken", "create", "alice", "--name", "deploy")
    token = out.strip()
    row = ApiToken.objects.get()
    assert token.startswith("sd_") and len(token) > 40
    assert (row.key_hash, row.prefix, row.name, row.user) == (
        hash_token(token),
        token[:8],
        "deploy",
        alice,
    )
    assert token not in err
    assert AuditRecord.objects.get().action == "token-create"


def test_apitoken_create_for_an_unknown_user_is_an_error(db: Any) -> None:
    with pytest.raises(CommandError, match="no user"):
        run("apitoken", "create", "nobody", "--name", "x")


def test_apitoken_list_shows_prefixes_not_tokens(alice: Any) -> None:
    token = run("apitoken", "create", "alice", "--name", "deploy")[0].strip()
    out, _ = run("apitoken", "list")
    assert token[:8] in out and "deploy" in out and token not in out


def test_apitoken_revoke_deletes_the_token(alice: Any) -> None:
    token = run("apitoken", "create", "alice", "--name", "deploy")[0].strip()
    out, _ = run("apitoken", "revoke", token[:8])
    assert out.startswith(f"revoked {token[:8]}")
    assert not ApiToken.objects.exists()
    assert AuditRecord.objects.filter(action="token-revoke").count() == 1


@pytest.mark.timeout(60)
def test_ctrl_c_hands_a_foreground_job_back_after_its_batch(
    r: redis.Redis, worker_env: dict[str, str]
) -> None:
    dead_letters(r, 20_000)  # ten seconds at the default 2,000/s
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "redrive", "--all"],
        cwd=ROOT,
        env=worker_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the first batch's progress line
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert "done" in first and proc.returncode == 1
    assert "queued again after its cursor" in err
    job = BulkJob.objects.get()
    assert (job.status, job.owner) == ("queued", "")
    assert 0 < job.done < 20_000 and r.xlen(STREAM) == job.done
