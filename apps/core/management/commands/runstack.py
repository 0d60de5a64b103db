"""`make run`: migrate, seed the demo tenant, then run web + Celery worker + Celery beat together.

The web server is gunicorn, as in production (`--preload`: the application, its views and the frozen
start-up objects are loaded once and shared by the forked workers), sized by `web_workers()`.

Ctrl-C (or SIGTERM) stops all three, then the embedded PostgreSQL and Redis this command started.
With DATABASE_URL / REDIS_URL set, nothing embedded is started or stopped.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys
import time
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from config import embedded

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


class Command(BaseCommand):
    help = "Run the whole Engram stack (web, worker, beat) in the foreground."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--host", default=os.environ.get("ENGRAM_HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("ENGRAM_PORT", "8000"))
        parser.add_argument("--concurrency", default=os.environ.get("ENGRAM_WORKER_CONCURRENCY", "2"))
        parser.add_argument(
            "--web-workers",
            type=int,
            default=int(os.environ.get("ENGRAM_WEB_WORKERS", "0")) or web_workers(),
            help="gunicorn worker processes (default: web_workers(), from the number of cores)",
        )
        parser.add_argument(
            "--web-threads",
            type=int,
            default=int(os.environ.get("ENGRAM_WEB_THREADS", "1")),
            help="threads per gunicorn worker (above 1: the gthread worker class)",
        )
        parser.add_argument("--no-seed", action="store_true", help="do not seed the demo tenant")

    def handle(self, *args: Any, **options: Any) -> None:
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
        self.stdout.write("Migrating…")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        if not options["no_seed"]:
            self.stdout.write("Seeding the demo tenant…")
            call_command("seed_demo")

        child_env = {
            **os.environ,
            "DATABASE_URL": settings.DATABASE_URL,
            "REDIS_URL": settings.REDIS_URL,
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.local"),
            "PYTHONUNBUFFERED": "1",
        }
        python = sys.executable
        commands = {
            "web": [
                python,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--preload",
                f"--workers={options['web_workers']}",
                *(
                    [f"--threads={options['web_threads']}", "--worker-class=gthread"]
                    if options["web_threads"] > 1
                    else []
                ),
                f"--bind={options['host']}:{options['port']}",
                "--timeout=120",
                *(
                    ["--access-logfile=-", f"--access-logformat={ACCESS_LOG_FORMAT}"]
                    if options["verbosity"] > 1
                    else []
                ),
                "--error-logfile=-",
            ],
            "worker": [
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
            "beat": [
                python,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "--loglevel=INFO",
                "--scheduler=django_celery_beat.schedulers:DatabaseScheduler",
                f"--pidfile={embedded.VAR_DIR / 'celerybeat.pid'}",
            ],
        }
        web_env = {
            **child_env,
            "ENGRAM_STATEMENT_TIMEOUT_MS": os.environ.get("ENGRAM_STATEMENT_TIMEOUT_MS", "15000"),
            # a web connection sees no tenant's rows until a request binds one (apps/core/tenancy.py)
            "ENGRAM_TENANT_SCOPE_DEFAULT": "none",
        }
        processes = {
            name: subprocess.Popen(cmd, env=web_env if name == "web" else child_env) for name, cmd in commands.items()
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
        try:
            while not stopping:
                exited = [name for name, proc in processes.items() if proc.poll() is not None]
                if exited:
                    self.stderr.write(f"{', '.join(exited)} exited; stopping the rest.")
                    break
                time.sleep(0.5)
        finally:
            self._shutdown(processes)

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
        if not os.environ.get("REDIS_URL"):
            embedded.stop_redis(embedded.DEV)
        if not os.environ.get("DATABASE_URL"):
            embedded.stop_postgres(embedded.DEV)
        self.stdout.write("Stopped.")
