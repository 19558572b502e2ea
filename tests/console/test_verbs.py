"""No URL changes anything on GET or HEAD: every pattern of the URL map, walked with real
arguments as a signed-in superuser, leaves Redis and the database as they were, and every
action URL answers 405 (a link or a cross-site navigation carries the session cookie)."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.apps import apps
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern

from console.actions import error_groups, services
from tests.support.engine import STREAM
from workers.models import AgentRun, BulkJob

pytestmark = pytest.mark.django_db(transaction=True)

# URL names (namespace:name) that act: GET and HEAD must answer 405 and change nothing.
ACTIONS = {
    "rerun",
    "cancel",
    "group_action",
    "dead_action",
    "dead_retry",
    "job_cancel",
    "replay_start",
    "api_group",
    "api_dead",
    "api_rerun",
    "api_cancel",
    "wait_answer",
    "api_wait_answer",
    "api_job_cancel",
    "error_group_action",
    "webhook",
    "logout",
    "admin:logout",
}
# URL names that only read (or show a form on GET): checked for no change.
READS = {
    "overview",
    "agents",
    "agent",
    "api_agents",
    "workers",
    "stream",
    "group",
    "dead_letters",
    "event",
    "event_by_hash",
    "dead_preview",
    "jobs",
    "replay",
    "replay_preview",
    "timers",
    "waits",
    "errors",
    "error_group",
    "redis",
    "runs",
    "api_runs",
    "audit",
    "login",
    "admin_login",
    "api_streams",
    "api_dead_preview",
    "api_job",
    "api_waits",
    "metrics",
}
ROUTE_ARG = re.compile(r"<(?:\w+:)?(\w+)>")
REGEX_ARG = re.compile(r"\(\?P<(\w+)>[^)]*\)")


def walk(patterns: list[Any], chain: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from walk(p.url_patterns, (*chain, p))
        else:
            assert isinstance(p, URLPattern)
            yield (*chain, p)


def name_of(chain: tuple[Any, ...]) -> str:
    spaces = [c.namespace for c in chain[:-1] if isinstance(c, URLResolver) and c.namespace]
    return ":".join([*spaces, chain[-1].name or "<unnamed>"])


def fill(pattern: Any, values: dict[str, str]) -> str:
    text = str(pattern.pattern)
    if isinstance(pattern.pattern, RoutePattern):
        return ROUTE_ARG.sub(lambda m: values[m.group(1)], text)
    return REGEX_ARG.sub(lambda m: values[m.group(1)], text).lstrip("^").rstrip("$")


def admin_model(chain: tuple[Any, ...]) -> Any:
    """The model of an admin URL (``admin/<app>/<model>/...``), if it is one."""
    routes = [str(c.pattern) for c in chain]
    if len(routes) > 2 and routes[0] == "admin/" and routes[1].count("/") == 2:
        app_label, model, _ = routes[1].split("/")
        return apps.get_model(app_label, model)
    return None


def samples(chain: tuple[Any, ...], known: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every combination of sample values for the pattern's arguments."""
    names: list[str] = []
    for c in chain:
        text = str(c.pattern)
        found = (ROUTE_ARG if isinstance(c.pattern, RoutePattern) else REGEX_ARG).findall(text)
        names += found
    model = admin_model(chain)
    choices: list[list[str]] = []
    for n in names:
        if n == "object_id" and model is not None:
            first = model.objects.order_by("pk").first()
            choices.append([str(first.pk if first else 1)])
            continue
        assert n in known, f"{name_of(chain)}: no sample value for <{n}>; add one to the test"
        choices.append(known[n])
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*choices)]


def urls(known: dict[str, list[str]]) -> list[tuple[str, str]]:
    out = []
    for chain in walk(get_resolver().url_patterns):
        for values in samples(chain, known):
            out.append((name_of(chain), "/" + "".join(fill(c, values) for c in chain)))
    return out


def state(r: redis.Redis) -> dict[str, str]:
    """A digest of every Redis key (DUMP) and every database row but sessions."""
    out: dict[str, str] = {}
    keys = sorted(r.scan_iter(count=1000))
    with r.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.execute_command("DUMP", key, NEVER_DECODE=True)
        dumps = pipe.execute()
    for key, dump in zip(keys, dumps, strict=True):
        out[f"redis:{key}"] = hashlib.sha256(dump or b"").hexdigest()
    for model in apps.get_models():
        if model is Session:
            continue
        rows = repr(list(model.objects.order_by("pk").values_list()))
        out[f"db:{model._meta.label}"] = hashlib.sha256(rows.encode()).hexdigest()
    return out


@pytest.fixture(autouse=True)
def _scrapes(settings: Any) -> None:
    # The test client's address: GET /metrics is a real scrape here, not a 403.
    settings.STREAMDESK_METRICS_ALLOW = ["127.0.0.1/32"]


@pytest.fixture
def world(r: redis.Redis, traffic: list[str]) -> dict[str, list[str]]:
    """Something for every action to act on: pending entries, a dead letter, a finished
    event, a queued job, a paused group (for resume), and sample values naming them."""
    pending = r.xadd(STREAM, {"event": '{"type": "demo.echo", "data": {"n": 9}}'})
    r.xreadgroup("agents", "gone-worker", {STREAM: ">"})
    admin = User.objects.create_superuser("root", "", "pw-root")
    client = Client()
    client.force_login(admin)
    response = client.post(
        f"/api/streams/{STREAM}/dead/redrive/",
        {"all": True, "reason_is": "handler-error"},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    job = BulkJob.objects.get()
    # Keys the workers left with a TTL (the sweep token, timed to the next chore) would
    # expire while the URLs are walked: the clock's change, not a request's.
    for key in r.scan_iter(count=1000):
        if r.pttl(key) > 0:
            r.persist(key)
    done = AgentRun.objects.filter(status="succeeded").first()
    assert done is not None
    return {
        "stream": [STREAM],
        "group": ["agents"],
        "action": sorted(
            set(services.GROUP_ACTIONS)
            | set(services.DEAD_ACTIONS)
            | set(error_groups.GROUP_ACTIONS)
        ),
        "fingerprint": [str(r.xrange(f"{STREAM}:dead")[0][1]["fingerprint"])],
        "entry_id": [str(pending)],
        "dead_id": [str(r.xrange(f"{STREAM}:dead")[0][0])],
        "event_hash": [done.event_hash],
        "event_type": [done.event_type],
        "name": [done.event_type],  # an agent's: a home agent is named by its type
        "job_id": [str(job.pk)],
        "source": ["demo"],
        "id": [str(admin.pk)],
        "object_id": [str(admin.pk)],
        "content_type_id": [str(ContentType.objects.get_for_model(User).pk)],
        "app_label": ["workers", "auth"],
        "url": ["nothing-here/"],
    }


def signed_in() -> Client:
    client = Client()
    client.force_login(User.objects.get(username="root"))
    return client


def test_every_url_name_is_an_action_or_a_read() -> None:
    names = {name_of(c) for c in walk(get_resolver().url_patterns)}
    ours = {n for n in names if not n.startswith(("admin:", "<unnamed>"))}
    assert ours <= ACTIONS | READS, f"classify these URLs in the test: {ours - ACTIONS - READS}"
    assert ACTIONS - {"admin:logout"} <= names


def test_get_and_head_change_nothing(r: redis.Redis, world: dict[str, list[str]]) -> None:
    client = signed_in()
    changed = []
    for name, url in urls(world):
        for method in ("get", "head"):
            before = state(r)
            status = getattr(client, method)(url).status_code
            after = state(r)
            if name == "metrics":
                assert status == 200, f"{method.upper()} {url} -> {status}"
            if after != before:
                diff = sorted(
                    k for k in before.keys() | after.keys() if before.get(k) != after.get(k)
                )
                changed.append(f"{method.upper()} {url} ({name}) -> {status} changed {diff}")
    assert not changed, "\n".join(changed)


def test_get_and_head_on_actions_are_405(r: redis.Redis, world: dict[str, list[str]]) -> None:
    client = signed_in()
    wrong = []
    for name, url in urls(world):
        if name not in ACTIONS:
            continue
        for method in ("get", "head"):
            response = getattr(client, method)(url)
            if response.status_code != 405 or "POST" not in response.get("Allow", ""):
                wrong.append(f"{method.upper()} {url} ({name}) -> {response.status_code}")
    assert not wrong, "\n".join(wrong)
