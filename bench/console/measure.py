"""The console benchmark's timed part, run as a subprocess from the frozen code snapshot.

    python -m bench.console.measure PLAN.json RESULT.json

PLAN names the data sets (a Redis URL each, plus ids in the middle of each list) and the
number of rounds. Each round times every subject once on every data set, alternating which
set goes first, so drift on a shared machine hits both sides of a ratio alike. The data
set is switched by pointing ``settings.REDIS_URL`` at the other database, so both are
timed in the same process, with the same warm caches.

Server-side time of a page: the time around ``django.test.Client.get`` (URL routing,
middleware, the session and user from SQLite, the view's Redis reads, template rendering).
Each call's CPU time (this thread's) and the time the garbage collector ran during it are
kept beside its wall time: a slow call with little CPU time waited (for the CPU, on a shared
machine, or for Redis), it did not compute.
"""

from __future__ import annotations

import copy
import gc
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402

from bench.console.load import GROUP, STREAM, heartbeats  # noqa: E402
from bench.console.records import dead_event, operator_records  # noqa: E402
from console.live.sampler import Sampler  # noqa: E402
from console.live.ticker import make_sampler  # noqa: E402
from console.reads import browse  # noqa: E402
from console.runtime import keys  # noqa: E402
from console.views.dashboard import current_overview  # noqa: E402
from workers.from_settings import redis_client  # noqa: E402
from workers.monitor.history import RESOLUTIONS, to_point  # noqa: E402
from workers.monitor.sample import collect  # noqa: E402

# As console/asgi.py does when daphne starts: the start-up objects (Django, the apps, URL
# patterns) are kept out of the collector's full passes. Without it this process, unlike the
# console it stands for, paid 70-90 ms for a full collection in whichever page triggered one.
gc.collect()
gc.freeze()

HOST = "127.0.0.1"
STREAM_URL = f"/streams/{STREAM}/"
GROUP_URL = f"/streams/{STREAM}/groups/{GROUP}/"
DEAD_URL = f"/streams/{STREAM}/dead/"


def use(url: str) -> None:
    """Point the console (views, sampler, channel layer) at one data set's database."""
    settings.REDIS_URL = url


def seed_history(at_ms: int) -> None:
    """A full history (5 min of 1 s points, 1 h of 10 s points, 24 h of 1 min points), as a
    deployment whose recorder has run for a day has: the charts then cover every point."""
    client, k = redis_client(), keys()
    base = to_point(collect(client, k))

    def point(ago_ms: int, per_s: int) -> str:
        p = copy.deepcopy(base)
        p["t"] = at_ms - ago_ms
        behind = ago_ms // 1000 * per_s
        for s in p["s"].values():
            for field in ("n", "a", "p"):
                s[field] = max((s[field] or 0) - behind, 0)
        return json.dumps(p, separators=(",", ":"))

    with client.pipeline(transaction=False) as pipe:
        pipe.delete(*(k.history(r.name) for r in RESOLUTIONS), k.console_broadcaster)
        for r in RESOLUTIONS:
            ago = [i * r.step_ms for i in range(r.max_points - 1)]
            pipe.zadd(k.history(r.name), {point(a, 200): at_ms - a for a in ago})
        pipe.execute()


def check_pages(plan: dict[str, Any]) -> dict[str, int]:
    """Every page the benchmark times shows a full page of rows (else the ratio lies)."""
    client = redis_client()
    if client.xlen(STREAM) != plan["entries"]:  # REDIS_URL really points at this set
        raise RuntimeError(f"{STREAM} has {client.xlen(STREAM)} entries, not {plan['entries']}")
    rows = {
        "entries": browse.entries_page(client, STREAM, keys=keys()),
        "entries deep": browse.entries_page(client, STREAM, before=plan["mid_entry"], keys=keys()),
        "pending": browse.pending_page(client, STREAM, GROUP),
        "pending deep": browse.pending_page(client, STREAM, GROUP, after=plan["mid_pending"]),
        "dead": browse.dead_page(client, STREAM),
        "dead deep": browse.dead_page(client, STREAM, before=plan["mid_dead"]),
    }
    counts = {name: len(page.rows) for name, page in rows.items()}
    short = {name: n for name, n in counts.items() if n != browse.PAGE_SIZE}
    if short:
        raise RuntimeError(f"pages with fewer than {browse.PAGE_SIZE} rows: {short}")
    return counts


def staff_client() -> Client:
    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client(HTTP_HOST=HOST)
    client.force_login(user)
    return client


def page(client: Client, path: str) -> Callable[[], object]:
    def get() -> object:
        response = client.get(path)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path}: {response.status_code}")
        return response

    return get


def full_tick(sampler: Sampler) -> object:
    """A tick that did all its work: one without the broadcaster lease returns early."""
    tick = sampler.tick()
    if tick is None:
        raise RuntimeError("the sampler is not the broadcaster: its tick did no work")
    return tick


def subjects(
    client: Client, plan: dict[str, Any], sampler: Sampler, dead_entry: str
) -> dict[str, Callable[[], object]]:
    return {
        "collect": lambda: collect(redis_client(), keys()),
        "current_overview": current_overview,
        "entries_page": lambda: browse.entries_page(redis_client(), STREAM, keys=keys()),
        "pending_page": lambda: browse.pending_page(redis_client(), STREAM, GROUP),
        "dead_page": lambda: browse.dead_page(redis_client(), STREAM),
        "tick": lambda: full_tick(sampler),
        "overview": page(client, "/"),
        "stream": page(client, STREAM_URL),
        "stream deep": page(client, f"{STREAM_URL}?before={plan['mid_entry']}"),
        "pending": page(client, GROUP_URL),
        "pending deep": page(client, f"{GROUP_URL}?after={plan['mid_pending']}"),
        # Nothing matches (every entry was delivered once), so it reads MAX_SCAN entries.
        "pending filtered": page(client, f"{GROUP_URL}?min_deliveries=2"),
        "dead": page(client, DEAD_URL),
        "dead deep": page(client, f"{DEAD_URL}?before={plan['mid_dead']}"),
        # A dead event's page: for its Retry button it reads up to 1,000 dead letters of
        # the minute around its dead_lettered step (workers/operations/redrive.find_letter).
        "event dead": page(client, f"{STREAM_URL}entries/{dead_entry}/"),
        "workers": page(client, "/workers/"),
        "jobs": page(client, "/jobs/"),
        "audit": page(client, "/audit/"),
    }


class GcClock:
    """Time spent in the garbage collector (any generation) since the last ``reset``."""

    def __init__(self) -> None:
        self.ms = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.ms += (time.perf_counter() - self._start) * 1000

    def reset(self) -> None:
        self.ms = 0.0


def main(plan_path: str, out_path: str) -> int:
    plan = json.loads(Path(plan_path).read_text())
    sets: dict[str, dict[str, Any]] = plan["sets"]
    client = staff_client()
    operator_records()  # the database is shared by both sets: its pages cost the same
    prepared: dict[str, dict[str, Callable[[], object]]] = {}
    rows: dict[str, dict[str, int]] = {}
    for name, info in sets.items():
        use(info["url"])
        seed_history(int(time.time() * 1000))
        rows[name] = check_pages(info)
        entry = dead_event(redis_client())
        shown = client.get(f"{STREAM_URL}entries/{entry}/").content
        if b"/retry/" not in shown:  # else the page did not find its letter: a cheaper path
            raise RuntimeError(f"the event page of dead entry {entry} has no Retry button")
        sampler = make_sampler()
        full_tick(sampler)  # takes the broadcaster lease
        prepared[name] = subjects(client, info, sampler, entry)
    names = list(sets)
    ms: dict[str, dict[str, list[float]]] = {s: {n: [] for n in names} for s in prepared[names[0]]}
    cpu: dict[str, dict[str, list[float]]] = {s: {n: [] for n in names} for s in ms}
    in_gc: dict[str, dict[str, list[float]]] = {s: {n: [] for n in names} for s in ms}
    gc_clock = GcClock()
    for round_ in range(plan["warmup"] + plan["repeats"]):
        order = names if round_ % 2 == 0 else names[::-1]
        for name in order:
            use(sets[name]["url"])
            heartbeats(redis_client())  # not timed: keeps the four workers "live"
        for subject in ms:
            for name in order:
                use(sets[name]["url"])
                call = prepared[name][subject]
                gc_clock.reset()
                began, began_cpu = time.perf_counter(), time.thread_time()
                call()
                elapsed = (time.perf_counter() - began) * 1000
                used = (time.thread_time() - began_cpu) * 1000
                if round_ >= plan["warmup"]:
                    ms[subject][name].append(elapsed)
                    cpu[subject][name].append(used)
                    in_gc[subject][name].append(gc_clock.ms)
    objects = len(gc.get_objects())
    full_gc = []
    for _ in range(3):  # what one full collection costs in this process, as it is now
        began = time.perf_counter()
        gc.collect()
        full_gc.append((time.perf_counter() - began) * 1000)
    for info in sets.values():  # hand the broadcaster lease over to daphne's sampler
        use(info["url"])
        redis_client().delete(keys().console_broadcaster)
    result = {
        "ms": ms,
        "cpu": cpu,
        "gc": in_gc,
        "gc_objects": objects,
        "full_gc_ms": sorted(full_gc)[1],
        "rows": rows,
        "session": client.cookies["sessionid"].value,
    }
    Path(out_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
