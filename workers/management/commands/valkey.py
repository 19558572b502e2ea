"""``manage.py valkey start|stop|status``: the embedded Valkey server, or a local cluster
(``--cluster N``), by hand."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workers.core.errors import StreamdeskError
from workers.core.redact import redact_url
from workers.from_settings import data_dir
from workers.redis.cluster import DEFAULT_BASE_PORT, MIN_MASTERS, ClusterStatus, LocalCluster
from workers.redis.embedded import EmbeddedValkey


class Command(BaseCommand):
    help = (
        "Start, stop or show the embedded Valkey server used when REDIS_URL is not set; "
        "with --cluster, a local Valkey cluster (loopback only, data in "
        ".streamdesk/cluster/) for trying cluster mode: not for production."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status"])
        parser.add_argument(
            "--cluster",
            type=int,
            nargs="?",
            const=MIN_MASTERS,
            metavar="N",
            help=f"act on the local cluster; with start, its number of masters "
            f"(at least {MIN_MASTERS}, the default)",
        )
        parser.add_argument(
            "--replicas",
            type=int,
            metavar="N",
            help="with start --cluster: replicas per master (default 0)",
        )
        parser.add_argument(
            "--port",
            type=int,
            metavar="PORT",
            help=f"with start --cluster: the first node's port (default {DEFAULT_BASE_PORT}); "
            "the nodes use the ports after it, and the same + 10000 for their cluster bus",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["cluster"] is not None:
                self.cluster(options)
            else:
                self.single(options)
        except StreamdeskError as exc:
            raise CommandError(str(exc)) from exc

    def single(self, options: dict[str, Any]) -> None:
        for flag in ("replicas", "port"):
            if options[flag] is not None:
                raise CommandError(f"--{flag} is for a cluster: start --cluster N --{flag} ...")
        if settings.REDIS_URL:
            shown = redact_url(settings.REDIS_URL)
            self.stdout.write(f"REDIS_URL is set ({shown}): the embedded server is not used")
        server = EmbeddedValkey(data_dir())
        if options["action"] == "start":
            started = server.ensure_running()
            self.stdout.write(f"{'started' if started else 'already running'}: {server.url}")
        elif options["action"] == "stop":
            stopped = server.stop()
            self.stdout.write("stopped" if stopped else "not running")
        else:
            st = server.status()
            state = f"running (pid {st.pid})" if st.running else "not running"
            self.stdout.write(f"{state}: {st.url}, data in {st.data_dir}")

    def cluster(self, options: dict[str, Any]) -> None:
        folder = data_dir() / "cluster"
        if options["action"] == "start":
            replicas, port = options["replicas"], options["port"]
            cluster = LocalCluster(
                folder,
                options["cluster"],
                0 if replicas is None else replicas,
                DEFAULT_BASE_PORT if port is None else port,
            )
            result = cluster.start()
            done = f"started in {result.elapsed_s:.1f} s" if result.started else "already running"
            self.stdout.write(f"cluster {done}: {cluster.layout.describe()}, data in {folder}")
            self.stdout.write(f"REDIS_URL={result.url}")
            return
        for flag in ("replicas", "port"):
            if options[flag] is not None:
                raise CommandError(f"--{flag} is for start --cluster")
        existing = LocalCluster.existing(folder)
        if existing is None:
            self.stdout.write(f"no cluster in {folder}")
        elif options["action"] == "stop":
            stopped = existing.stop()
            self.stdout.write(f"stopped {stopped} nodes" if stopped else "not running")
        else:
            self.show(existing.status())

    def show(self, status: ClusterStatus) -> None:
        for node in status.nodes:
            pid = f"pid {node.pid}" if node.pid else "no pid"
            slots = f"slots {node.slots}" if node.slots else "no slots"
            state = "up" if node.up else "down"
            self.stdout.write(
                f"{node.port}  {node.role or '-':<7}  {pid:<10}  {slots:<18}  {state}"
            )
        self.stdout.write(f"cluster_state: {status.state}, {status.url}, data in {status.data_dir}")
