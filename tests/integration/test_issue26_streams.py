"""``manage.py streams`` shows the model tokens and estimated cost the console's overview
shows (issue 26, item 15), from the usage hash its one sample already reads."""

from __future__ import annotations

import json
from io import StringIO

import redis
from django.core.management import call_command

from workers.core.keys import Keys
from workers.monitor.sample import collect
from workers.monitor.usage import usage_rows

USAGE = {
    "github.issues.opened": (12, 34_567, 1_234, 2.5),
    "demo.echo": (40, 4_000, 800, 0.0012),
}


def record_usage(r: redis.Redis) -> None:
    """The usage hash as the engine's ``stats.queue_usage`` leaves it."""
    fields = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")
    r.hset(
        Keys().usage,
        mapping={
            f"{t}|{k}": v for t, row in USAGE.items() for k, v in zip(fields, row, strict=True)
        },
    )


def test_streams_text_shows_tokens_and_cost_in_total_and_by_type(r: redis.Redis) -> None:
    record_usage(r)
    out = StringIO()
    call_command("streams", stdout=out)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model usage:"))
    assert lines[start:] == [
        "model usage: 52 calls, 38,567 prompt tokens, 2,034 completion tokens, $2.50 estimated",
        "  github.issues.opened: 12 calls, 34,567 prompt tokens, 1,234 completion tokens, "
        "$2.50 estimated",
        "  demo.echo: 40 calls, 4,000 prompt tokens, 800 completion tokens, $0.0012 estimated",
    ]


def test_streams_json_has_the_consoles_usage_rows_and_their_total(r: redis.Redis) -> None:
    record_usage(r)
    out = StringIO()
    call_command("streams", "--json", stdout=out)
    usage = json.loads(out.getvalue())["usage"]
    # The rows the console's overview renders, from its own sample, in its order.
    console_rows = usage_rows(collect(r, Keys(), []).usage)
    assert [row["event_type"] for row in usage["by_type"]] == [
        row.event_type for row in console_rows
    ]
    assert usage["by_type"][0] == {
        "event_type": "github.issues.opened",
        "calls": 12,
        "prompt_tokens": 34_567,
        "completion_tokens": 1_234,
        "cost_usd": 2.5,
    }
    assert usage["total"]["prompt_tokens"] == 38_567 and usage["total"]["calls"] == 52
    assert abs(usage["total"]["cost_usd"] - 2.5012) < 1e-9


def test_streams_without_model_calls_says_so(r: redis.Redis) -> None:
    out = StringIO()
    call_command("streams", stdout=out)
    assert out.getvalue().splitlines()[-1] == "model usage: no model calls recorded yet"
    out = StringIO()
    call_command("streams", "--json", stdout=out)
    assert json.loads(out.getvalue())["usage"]["by_type"] == []
