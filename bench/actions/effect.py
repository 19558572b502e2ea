"""What a bulk job costs the workers: a real ``runworker`` kept busy by a steady producer,
its throughput measured in windows without a job (baselines) and while one runs.

The producer (``python -m bench.actions.load``) XADDs ``demo.echo`` events at a fixed rate
above what one worker can do, so the worker always has a backlog and its throughput is its
capacity: what a job takes away shows. Throughput is the engine's own counter
(``streamdesk:stats:streamdesk:events`` ``processed``), read at the edges of each window and
every second inside it. Each window with a job sits between two baselines, and its ratio
is against their mean, so slow drift on the shared machine mostly cancels out.

Both jobs act where the worker works: the redrive adds the dead letters' events to the
stream the worker reads (they join the backlog), the claim moves pending entries of the
worker's own group. The worker runs with ``--claim-idle-ms`` far above the run's length, so
it never takes the orphaned consumer's entries itself.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import redis
from django.db import connection

from bench.actions import load
from bench.actions.jobs import CLAIM_ALL, DEFAULT, OFF, REDRIVE, JobRun, run_job
from bench.common.harness import PYTHON, BenchError, log_tail, spawn, stop, wait_until
from workers.core.keys import Keys

# Baseline, job, baseline, job...: every job window has a baseline on each side. Each job
# at the default rate runs twice (the figure that matters, on a noisy machine), then each
# with the limit off on what is left (stopped after a window, a job is queued again).
SEQUENCE: tuple[tuple[str, str] | None, ...] = (
    None,
    *[step for _ in range(2) for step in ((REDRIVE, DEFAULT), None, (CLAIM_ALL, DEFAULT), None)],
    (REDRIVE, OFF),
    None,
    (CLAIM_ALL, OFF),
    None,
)
# The worker windows start from this many times the entries of the runs alone, so the jobs
# with the limit off, after the default-rate windows, still have seconds of work left.
EFFECT_SCALE = 2
BACKLOG_S = 10.0  # seconds of the producer's rate, in the stream before the worker starts
READY_TIMEOUT_S = 60.0
JOB_STOP_TIMEOUT_S = 120.0
# Far above the run's length: the worker leaves the orphaned consumer's entries alone.
CLAIM_IDLE_MS = 3_600_000
TICK = os.sysconf("SC_CLK_TCK")
MACHINE = "machine"  # every process's CPU time, not only ours


@dataclass
class Sample:
    t: float
    processed: int
    lag: int  # entries of the stream the group has not read yet: the worker's backlog
    cpu: dict[str, float]  # CPU seconds used so far, per process


@dataclass
class Window:
    action: str  # "baseline" or the job's action
    rate: str  # the job's rate limit ("" for a baseline)
    seconds: float
    processed: int  # events the worker finished in the window
    per_second: list[float]  # its throughput in each whole second of the window
    lag_start: int
    lag_end: int
    cpu: dict[str, float]  # CPU seconds each process used in the window, and MACHINE
    job: dict[str, Any] = field(default_factory=dict)  # JobRun.as_dict(), plus "in_window"

    @property
    def rate_per_s(self) -> float:
        return self.processed / self.seconds


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_busy_seconds() -> float:
    """CPU time every CPU of the machine spent busy (all processes, ours and others')."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:9]]
    return (sum(values) - values[3] - values[4]) / TICK  # minus idle and iowait


class Probe:
    def __init__(self, client: redis.Redis, pids: dict[str, int]) -> None:
        self.client = client
        self.pids = pids
        self.stats_key = Keys().stats(load.STREAM)

    def sample(self) -> Sample:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.hget(self.stats_key, "processed")
            pipe.xinfo_groups(load.STREAM)
            processed, groups = pipe.execute()
        group = next(g for g in cast(list[dict[str, Any]], groups) if g["name"] == load.GROUP)
        cpu = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        cpu[MACHINE] = machine_busy_seconds()
        return Sample(time.monotonic(), int(processed or 0), int(group.get("lag") or 0), cpu)

    def window(
        self,
        action: str,
        rate: str,
        seconds: float,
        done: threading.Event | None = None,
    ) -> tuple[Sample, Sample, list[float]]:
        """Samples at the start and the end (``seconds`` later, or when ``done`` is set) and
        the throughput of every whole second in between."""
        first = last = self.sample()
        per_second: list[float] = []
        while last.t - first.t < seconds and not (done is not None and done.is_set()):
            wait = min(1.0, first.t + seconds - last.t)
            if done is not None:
                done.wait(wait)
            else:
                time.sleep(wait)
            now = self.sample()
            if now.t - last.t >= 0.99:
                per_second.append((now.processed - last.processed) / (now.t - last.t))
            last = now
        return first, last, per_second


def _window(action: str, rate: str, first: Sample, last: Sample, per_second: list[float]) -> Window:
    return Window(
        action=action,
        rate=rate,
        seconds=last.t - first.t,
        processed=last.processed - first.processed,
        per_second=per_second,
        lag_start=first.lag,
        lag_end=last.lag,
        cpu={k: last.cpu[k] - first.cpu[k] for k in last.cpu},
    )


def job_window(url: str, probe: Probe, action: str, rate: str, seconds: float) -> Window:
    """Run the job in a thread (as the console's runner does) for at most ``seconds``."""
    stopping, started, finished = threading.Event(), threading.Event(), threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=60)
        try:
            box["run"] = run_job(client, action, rate, stopping.is_set, started.set)
        except BaseException as exc:  # reported by the caller
            box["error"] = exc
        finally:
            started.set()
            finished.set()
            client.close()
            connection.close()

    thread = threading.Thread(target=work, name=f"job-{action}", daemon=True)
    thread.start()
    if not started.wait(READY_TIMEOUT_S):
        raise BenchError(f"the {action} job did not start")
    first, last, per_second = probe.window(action, rate, seconds, finished)
    stopping.set()
    thread.join(JOB_STOP_TIMEOUT_S)
    if thread.is_alive():
        raise BenchError(f"the {action} job did not stop")
    if "error" in box:
        raise BenchError(f"the {action} job failed: {box['error']!r}")
    run: JobRun = box["run"]
    window = _window(action, rate, first, last, per_second)
    in_window = max((done for t, done in run.progress if t <= last.t), default=0)
    window.job = {**run.as_dict(), "in_window": in_window}
    return window


def effect(client: redis.Redis, url: str, plan: dict[str, Any], log_dir: Path) -> dict[str, Any]:
    entries, seconds = EFFECT_SCALE * int(plan["entries"]), float(plan["seconds"])
    built = load.build(client, dead=entries, pending=entries)
    # A head start for the backlog, so the worker never runs dry even where it is briefly
    # faster than the producer.
    backlog = int(BACKLOG_S * float(plan["produce_rate"]))
    load.add_events(client, "backlog", 0, backlog)
    cmd = [*plan["worker_cmd"], "--claim-idle-ms", str(CLAIM_IDLE_MS)]
    env, cwd = dict(os.environ), Path.cwd()
    produce = [PYTHON, "-m", "bench.actions.load", url, str(plan["produce_rate"])]
    worker_log, producer_log = log_dir / "actions-runworker.log", log_dir / "actions-producer.log"
    windows: list[Window] = []
    with (
        spawn(produce, env, producer_log, cwd) as producer,
        spawn(cmd, env, worker_log, cwd) as worker,
    ):
        server_pid = int(cast(dict[str, Any], client.info("server"))["process_id"])
        probe = Probe(
            client,
            {
                "runworker": worker.pid,
                "job (this process)": os.getpid(),
                "valkey": server_pid,
                "producer": producer.pid,
            },
        )

        def processing() -> bool:
            if worker.poll() is not None:
                raise BenchError(f"runworker exited {worker.returncode}:\n{log_tail(worker_log)}")
            return probe.sample().processed > 0

        wait_until(processing, "runworker to process events", READY_TIMEOUT_S, 0.1)
        time.sleep(float(plan["warmup_s"]))
        for step in SEQUENCE:
            if step is None:
                first, last, per_second = probe.window("baseline", "", seconds)
                windows.append(_window("baseline", "", first, last, per_second))
            else:
                windows.append(job_window(url, probe, *step, seconds))
            w = windows[-1]
            print(
                f"   {w.action} {w.rate}: {w.rate_per_s:,.0f} events/s over {w.seconds:.1f} s"
                + (f", job {w.job['in_window']:,} entries" if w.job else ""),
                flush=True,
            )
            if worker.poll() is not None:
                raise BenchError(f"runworker exited {worker.returncode}:\n{log_tail(worker_log)}")
        stop(producer, producer_log)
        stop(worker, worker_log)
    return {
        "entries": entries,
        "backlog": backlog,
        "build_s": built.seconds,
        "worker_cmd": cmd,
        "produce_rate": plan["produce_rate"],
        "warmup_s": plan["warmup_s"],
        "windows": [{**asdict(w), "rate_per_s": w.rate_per_s} for w in windows],
    }
