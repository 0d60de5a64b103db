"""`make run`: migrate, seed the demo tenant, then run web + Celery worker + Celery beat together.

The web tier is gunicorn, as in production (`--preload`: the application, its views and the frozen start-up
objects are loaded once and shared by the forked workers). By default (`--pools split`) it is two pools of sync
workers on unix sockets under var/run — the read pool and the write pool, the latter at a lower CPU priority —
behind `config/front.py` on the public port, which sends each request to its pool and answers 503 with
Retry-After when a lane has no free worker within its wait (docs/architecture.md, "Sizing"). `--pools single`
runs one pool of `web_workers()` workers on the port, as before issue 29.

Ctrl-C (or SIGTERM) stops all three, then the embedded PostgreSQL and Redis this command started (those it
found running are left running). With DATABASE_URL / REDIS_URL set, nothing embedded is started or stopped.
A second stack on the same database (a second beat would run every periodic job twice) or on a port another
server holds is refused before anything starts; a process of the stack that exits on its own stops the rest
and the command fails.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys
import time
from argparse import ArgumentParser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from apps.core import embeddings
from config import embedded

# each worker of a pool loads the query embedder before its first request (config/gunicorn.py)
POOL_HOOKS = ["--config=python:config.gunicorn"]
# gunicorn's access log (-v 2) without the query string: GET /context's `query` is the user's message
ACCESS_LOG_FORMAT = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def web_workers() -> int:
    """gunicorn's sync workers for this machine: two per core, at least three. A request holds its
    worker for its whole duration (a 200-message batch ingest: about a second), so one more worker than
    the cores keeps reads from queueing behind writes; more than two per core only adds context switches
    (the embedder and PostgreSQL are CPU-bound on the same cores). docs/architecture.md, "Sizing"."""
    return max(3, 2 * (os.cpu_count() or 1))


def read_workers() -> int:
    """The read pool: one more worker than cores, so the query embedding and PostgreSQL of one read overlap
    with another's (docs/architecture.md, "Sizing")."""
    return (os.cpu_count() or 1) + 1


def write_workers() -> int:
    """The write pool: one worker per core — a batch's embedding keeps one core busy, and writes run at a
    lower priority, so on an idle machine they use every core and under reads they yield."""
    return os.cpu_count() or 1


# The numeric options: (option, environment variable, least, greatest, the default when 0 or None). Given on the
# command line or in the environment, they are checked before anything starts: a typo is a one-line error naming
# both places, not a traceback.
NUMBERS: tuple[tuple[str, str, int, int, Callable[[], int] | None], ...] = (
    ("port", "ENGRAM_PORT", 0, 65535, None),
    ("concurrency", "ENGRAM_WORKER_CONCURRENCY", 1, 64, None),
    ("web_workers", "ENGRAM_WEB_WORKERS", 0, 256, web_workers),
    ("web_threads", "ENGRAM_WEB_THREADS", 1, 256, None),
    ("read_workers", "ENGRAM_READ_WORKERS", 0, 256, read_workers),
    ("write_workers", "ENGRAM_WRITE_WORKERS", 0, 256, write_workers),
    ("write_nice", "ENGRAM_WRITE_NICE", 0, 19, None),
)


def numbers(options: dict[str, Any]) -> dict[str, int]:
    """The numeric options as numbers (a 0 that means "from the machine" resolved), or CommandError."""
    checked: dict[str, int] = {}
    for name, variable, least, greatest, default in NUMBERS:
        given = options[name]
        try:
            value = int(str(given).strip())
        except ValueError:
            value = None
        if value is None or not least <= value <= greatest:
            flag = "--" + name.replace("_", "-")
            raise CommandError(
                f"{flag} (or {variable}) must be a whole number from {least} to {greatest}, not {str(given)!r}."
            )
        checked[name] = value or (default() if default is not None else value)
    return checked


def beat_pidfile() -> Path:
    """One beat per database: its pidfile is named after the database, so stacks on other databases of the same
    checkout (the tests', a benchmark's) each keep their own beat."""
    return embedded.VAR_DIR / f"celerybeat-{settings.DATABASES['default']['NAME']}.pid"


def beat_holding(pidfile: Path) -> int | None:
    """The pid of the running beat that holds `pidfile`, or None. A pidfile left by a stack that was killed (its
    process gone, or its number reused by another program) is removed here, so the new beat starts."""
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    except PermissionError:  # another user's process
        alive = True
    if alive:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # no /proc: a live process on the pidfile counts as the beat, as Celery counts it
            return pid
        if b"celery" in command and b"beat" in command:
            return pid
    pidfile.unlink(missing_ok=True)
    return None


def _niced(niceness: int) -> Callable[[], None]:
    def lower_priority() -> None:
        os.nice(niceness)

    return lower_priority


class Command(BaseCommand):
    help = "Run the whole Engram stack (web, worker, beat) in the foreground."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--host", default=os.environ.get("ENGRAM_HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("ENGRAM_PORT", "8000"))
        parser.add_argument("--concurrency", default=os.environ.get("ENGRAM_WORKER_CONCURRENCY", "2"))
        parser.add_argument(
            "--web-workers",
            default=os.environ.get("ENGRAM_WEB_WORKERS", "0"),
            help="gunicorn worker processes (default, or 0: web_workers(), from the number of cores)",
        )
        parser.add_argument(
            "--web-threads",
            default=os.environ.get("ENGRAM_WEB_THREADS", "1"),
            help="threads per gunicorn worker (above 1: the gthread worker class)",
        )
        parser.add_argument(
            "--pools",
            choices=("split", "single"),
            default=os.environ.get("ENGRAM_WEB_POOLS", "split"),
            help="split: a read pool and a write pool behind config/front.py (default); single: one pool",
        )
        parser.add_argument("--read-workers", default=os.environ.get("ENGRAM_READ_WORKERS", "0"))
        parser.add_argument("--write-workers", default=os.environ.get("ENGRAM_WRITE_WORKERS", "0"))
        parser.add_argument(
            "--write-nice",
            default=os.environ.get("ENGRAM_WRITE_NICE", "10"),
            help="the write pool's niceness (0: the reads' priority)",
        )
        parser.add_argument("--no-seed", action="store_true", help="do not seed the demo tenant")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            options |= numbers(options)
            self._refuse(options)
            self._prepare_graph()
        except CommandError:
            self._stop_embedded(report=False)  # what starting this command's settings started
            raise
        self.stdout.write("Migrating…")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        if not options["no_seed"]:
            self.stdout.write("Seeding the demo tenant…")
            call_command("seed_demo")

        child_env = {
            **os.environ,
            "DATABASE_URL": settings.DATABASE_URL,
            "DATABASE_MAINTENANCE_URL": settings.DATABASE_MAINTENANCE_URL,
            "REDIS_URL": settings.REDIS_URL,
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.local"),
            "PYTHONUNBUFFERED": "1",
            # the web, the worker and beat start bound to no tenant (apps/core/tenancy.py): requests and tasks
            # bind theirs; this command itself (migrate, seed) ran across tenants, as manage.py's commands do
            "ENGRAM_TENANT_SCOPE_DEFAULT": "none",
            "ENGRAM_DATABASE_LOGIN": "app",  # data-only grants; maintenance work switches login (maintenance_scope)
        }
        python = sys.executable
        web_env = {
            **child_env,
            "ENGRAM_STATEMENT_TIMEOUT_MS": os.environ.get("ENGRAM_STATEMENT_TIMEOUT_MS", "15000"),
        }
        logs = ["--access-logfile=-", f"--access-logformat={ACCESS_LOG_FORMAT}"] if options["verbosity"] > 1 else []
        # no control socket: several gunicorn masters (and several stacks of one checkout) would share its path
        gunicorn = [python, "-m", "gunicorn", "--timeout=120", "--no-control-socket", "--error-logfile=-", *logs]
        bind = f"--bind={options['host']}:{options['port']}"
        launches: dict[str, tuple[list[str], dict[str, str], int]] = {}  # name: (command, environment, niceness)
        if options["pools"] == "split":
            sockets = self._pool_sockets(options["port"])
            pool = [*gunicorn, *POOL_HOOKS, "config.wsgi:application", "--preload", "--proxy-protocol=v1"]
            launches["reads"] = (
                [*pool, f"--workers={options['read_workers']}", f"--bind=unix:{sockets['read']}"],
                web_env,
                0,
            )
            launches["writes"] = (
                [*pool, f"--workers={options['write_workers']}", f"--bind=unix:{sockets['write']}"],
                web_env,
                options["write_nice"],
            )
            front_env = {
                **child_env,
                "ENGRAM_READ_SOCKET": str(sockets["read"]),
                "ENGRAM_WRITE_SOCKET": str(sockets["write"]),
                "ENGRAM_READ_SLOTS": str(options["read_workers"]),
                "ENGRAM_WRITE_SLOTS": str(options["write_workers"]),
            }
            launches["front"] = (
                [
                    *gunicorn,
                    "config.front:application_build()",
                    "--workers=1",
                    "--worker-class=gthread",
                    f"--threads={os.environ.get('ENGRAM_FRONT_THREADS', '64')}",
                    bind,
                ],
                front_env,
                0,
            )
        else:
            launches["web"] = (
                [
                    *gunicorn,
                    *POOL_HOOKS,
                    "config.wsgi:application",
                    "--preload",
                    f"--workers={options['web_workers']}",
                    *(
                        [f"--threads={options['web_threads']}", "--worker-class=gthread"]
                        if options["web_threads"] > 1
                        else []
                    ),
                    bind,
                ],
                web_env,
                0,
            )
        launches["worker"] = (
            [
                python,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel=INFO",
                f"--concurrency={options['concurrency']}",
                "--hostname=engram@%h",
            ],
            child_env,
            0,
        )
        launches["beat"] = (
            [
                python,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "--loglevel=INFO",
                "--scheduler=django_celery_beat.schedulers:DatabaseScheduler",
                # one beat per database (two would schedule everything twice), while stacks on other databases of
                # the same checkout (the tests', a benchmark's) each keep their own
                f"--pidfile={beat_pidfile()}",
            ],
            child_env,
            0,
        )
        processes = {
            name: subprocess.Popen(command, env=env, preexec_fn=_niced(niceness) if niceness else None)
            for name, (command, env, niceness) in launches.items()
        }

        base = f"http://{options['host']}:{options['port']}"
        self.stdout.write(
            self.style.SUCCESS(
                "\nEngram is running (Ctrl-C stops everything)\n"
                f"  API            {base}/api/v1/   (docs: {base}/api/v1/docs/)\n"
                f"  MCP            {base}/mcp   (streamable HTTP, Bearer API key; stdio: manage.py mcp_stdio)\n"
                f"  health         {base}/healthz\n"
                f"  inspector      {base}/inspector/\n"
                f"  admin          {base}/admin/\n"
            )
        )

        stopping = False

        def _stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        exited: list[str] = []
        try:
            while not stopping:
                exited = [name for name, proc in processes.items() if proc.poll() is not None]
                if exited:
                    self.stderr.write(f"{', '.join(exited)} exited; stopping the rest.")
                    break
                time.sleep(0.5)
        finally:
            self._shutdown(processes)
        if exited and not stopping:  # not asked to stop: a failure, whose output is above
            raise CommandError(f"{', '.join(exited)} exited on its own (its output is above); the stack stopped.")

    def _prepare_graph(self) -> None:
        """A graph other than the package's is derived once per machine (not once per process) and loaded once
        here, its vectors on this CPU checked against the package graph's: a derived file unlike the pinned one,
        or a CPU whose integer kernels give other vectors, is a one-line refusal before anything starts."""
        graph = embeddings.configured_graph()
        if graph in (None, "package"):
            return
        self.stdout.write("Preparing the embedder's graph…")
        try:
            embeddings.LocalOnnxEmbedder(graph=graph).load()
        except embeddings.EmbedderUnavailable as refused:
            raise CommandError(str(refused)) from refused

    @staticmethod
    def _refuse(options: dict[str, Any]) -> None:
        """What the stack refuses before anything starts. A second stack on the same database would run a second
        beat (every periodic job twice), and on a taken port its web tier would exit and take the stack down."""
        if not is_loopback(options["host"]) and not getattr(settings, "IS_PRODUCTION", False):
            # development settings: the seeded users, the demo key and the operator's admin are for this machine
            raise CommandError(
                f"Refusing to listen on {options['host']} with development settings: bind 127.0.0.1 (the "
                "default), or run config.settings.production (DJANGO_SETTINGS_MODULE) with its secrets set."
            )
        if settings.DEBUG:
            raise CommandError(
                "DEBUG is on (DJANGO_DEBUG): the stack never serves Django's debug pages. Unset it, or debug "
                "with `manage.py runserver`."
            )
        other_beat = beat_holding(beat_pidfile())
        if other_beat is not None:
            raise CommandError(
                f"Another stack already runs on database {settings.DATABASES['default']['NAME']!r}: its beat "
                f"(pid {other_beat}) holds {beat_pidfile()}. One beat serves a database: stop that stack first "
                "(Ctrl-C where it runs), or point DATABASE_URL at another database."
            )
        refused = embedded.bind_refusal(options["host"], options["port"])
        if refused is not None:
            raise CommandError(
                f"Cannot listen on {options['host']}:{options['port']} ({refused}): another `make run` may hold "
                "it. Stop it, or choose another port (--port, ENGRAM_PORT)."
            )

    @staticmethod
    def _pool_sockets(port: int) -> dict[str, Path]:
        """The pools' unix sockets, one pair per port (several stacks may run from one checkout)."""
        run_dir = embedded.VAR_DIR / "run"
        run_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(run_dir, 0o700)  # only this user reaches the pools (they trust the front's PROXY line)
        sockets = {lane: run_dir / f"{port}-{lane}.sock" for lane in ("read", "write")}
        for path in sockets.values():
            path.unlink(missing_ok=True)  # left by a stack that was killed
        return sockets

    def _shutdown(self, processes: dict[str, subprocess.Popen[bytes]]) -> None:
        self.stdout.write("\nStopping web, worker and beat…")
        for proc in processes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in processes.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
        self._stop_embedded(report=True)
        self.stdout.write("Stopped.")

    def _stop_embedded(self, *, report: bool) -> None:
        """The embedded servers this command started; those it found running (another stack's, or started by
        `python -m config.embedded start`) are left to whoever started them."""
        left = []
        if not os.environ.get("REDIS_URL"):
            if embedded.started_here(embedded.DEV, "redis"):
                embedded.stop_redis(embedded.DEV)
            else:
                left.append("Redis")
        if not os.environ.get("DATABASE_URL"):
            if embedded.started_here(embedded.DEV, "postgres"):
                embedded.stop_postgres(embedded.DEV)
            else:
                left.append("PostgreSQL")
        if left and report:
            self.stdout.write(
                f"The embedded {' and '.join(left)} ran before this stack started: left running "
                "(python -m config.embedded stop)."
            )
