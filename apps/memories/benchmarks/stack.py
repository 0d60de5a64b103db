"""A running Engram as its clients meet it: an HTTP client for the end-to-end benchmarks, the stack that
`make run` starts (gunicorn, Celery worker and beat) started on a free port, and the worker's queue
watched until it has drained."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from django.conf import settings
from django.db import DatabaseError

from apps.core.embeddings import CACHE_KEY_PREFIX
from apps.core.redis import get_redis
from apps.core.timing import parse_server_timing
from apps.tenants.models import Tenant
from apps.tenants.services import tenant_delete

BASE_DIR = Path(settings.BASE_DIR)


RETRYABLE = {429, 502, 503, 504}


class HttpError(RuntimeError):
    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        body: str,
        retry_after: str | None = None,
        milliseconds: float = 0.0,
    ) -> None:
        super().__init__(f"{method} {path} → {status}: {body[:500]}")
        self.status = status
        self.retry_after = retry_after
        self.milliseconds = milliseconds  # how long the answer took to come


@dataclass(frozen=True)
class Timed:
    body: Any
    milliseconds: float
    server_timing: dict[str, float] = field(default_factory=dict)  # the Server-Timing header, {phase: ms}
    server_cpu: dict[str, float] = field(default_factory=dict)  # its processor time, {phase: ms}


class EngramClient:
    """The public API over HTTP with one kept-alive connection, as a client library would hold it."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 300.0) -> None:
        self.base_url = base_url.rstrip("/") + "/api/v1"
        self.timeout = timeout
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {api_key}"
        self.retries = 0

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> Timed:
        started = time.perf_counter()
        response = self.http.request(method, self.base_url + path, timeout=self.timeout, **kwargs)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code >= 400:
            raise HttpError(
                method, path, response.status_code, response.text, response.headers.get("Retry-After"), elapsed
            )
        return Timed(
            response.json() if response.content else None,
            elapsed,
            parse_server_timing(response.headers.get("Server-Timing", "")),
            parse_server_timing(response.headers.get("Server-Timing", ""), cpu=True),
        )

    def ingest_batch(self, messages: list[dict[str, Any]], *, attempts: int = 4) -> Timed:
        """As a client library sends it: a batch whose answer was lost (a dropped connection, a worker restarted,
        429/502/503/504) is sent again after Retry-After or a backoff, which is safe because every message
        carries its `message_id` (a repeated one stores nothing twice). `self.retries` counts the resends."""
        for attempt in range(attempts):
            try:
                return self.request("POST", "/ingest/batch", json={"messages": messages})
            except requests.ConnectionError:
                if attempt == attempts - 1:
                    raise
                wait = 2.0**attempt
            except HttpError as error:
                if error.status not in RETRYABLE or attempt == attempts - 1:
                    raise
                retry_after = error.retry_after or ""
                wait = float(retry_after) if retry_after.isdigit() else 2.0**attempt
            self.retries += 1
            time.sleep(wait)
        raise AssertionError("unreachable")

    def search(self, *, contact_id: str, query: str, top_k: int = 50, as_of: str | None = None) -> Timed:
        body: dict[str, Any] = {"contact_id": contact_id, "query": query, "top_k": top_k}
        if as_of is not None:
            body["as_of"] = as_of
        return self.request("POST", "/memories/search", json=body)

    def context(
        self,
        *,
        contact_id: str,
        query: str,
        token_budget: int | None = None,
        explain: bool = False,
        as_of: str | None = None,
    ) -> Timed:
        params: dict[str, Any] = {"query": query}
        if as_of is not None:
            params["as_of"] = as_of
        if token_budget is not None:
            params["token_budget"] = token_budget
        if explain:
            params["explain"] = "true"
        return self.request("GET", f"/context/{contact_id}", params=params)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def healthy(base_url: str) -> bool:
    """/healthz answers ok for the database, Redis and the worker (its heartbeat)."""
    try:
        response = requests.get(base_url.rstrip("/") + "/healthz", timeout=5)
    except requests.RequestException:
        return False
    return response.status_code == 200 and response.json().get("status") == "ok"


def _reason(log_path: Path) -> str:
    """The last error runstack wrote (a CommandError's message), or its last line."""
    lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("CommandError:")]
    return (errors or lines or ["no output"])[-1]


@contextmanager
def running_stack(
    *,
    log_path: Path,
    timeout: float = 180.0,
    database_url: str | None = None,
    extra_env: dict[str, str] | None = None,
    settings_module: str | None = None,
) -> Iterator[str]:
    """`manage.py runstack` (what `make run` runs: gunicorn + worker + beat) on a free port, against this
    process's database (or `database_url`) and Redis, until the block ends; yields its base URL. The servers it
    talks to are named by URL, so runstack neither starts nor stops them."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url or settings.DATABASE_URL,
        # the role that owns the tables: runstack migrates as it, and the worker's maintenance work logs in as it
        "DATABASE_MAINTENANCE_URL": os.environ.get("DATABASE_MAINTENANCE_URL", "")
        if database_url
        else settings.DATABASE_MAINTENANCE_URL,
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": settings_module or os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.local"),
        "PYTHONUNBUFFERED": "1",
        **(extra_env or {}),
    }
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if log_path.exists():  # the previous run's log (a stack of it may still be writing to it) is kept beside
        log_path.replace(log_path.with_name(log_path.name + ".1"))
    base_url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "runstack", "--port", str(port), "--no-seed"],
            cwd=BASE_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + timeout
            while not healthy(base_url):
                if process.poll() is not None:
                    raise RuntimeError(f"the stack exited before it was healthy ({_reason(log_path)}); see {log_path}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the stack was not healthy after {timeout:.0f} s; see {log_path}")
                time.sleep(0.5)
            yield base_url
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()


def queue_depth() -> int:
    """Messages waiting in the broker's default queue (not yet taken by a worker)."""
    return int(get_redis().llen(getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery")))


def workers_busy() -> int | None:
    """Tasks the workers are running or hold ready to run (countdown tasks waiting for their time are not
    counted); None when no worker answered."""
    from config.celery_app import app

    inspector = app.control.inspect(timeout=1.0)
    active, reserved = inspector.active(), inspector.reserved()
    if active is None and reserved is None:
        return None
    return sum(len(tasks) for replies in (active or {}, reserved or {}) for tasks in replies.values())


def wait_drained(
    *, timeout: float = 1800.0, poll: float = 1.0, on_poll: Callable[[int, int], None] | None = None
) -> float:
    """Block until the queue is empty and no worker runs a task, twice in a row (beat keeps queueing its
    30-second jobs, which take milliseconds). Returns the seconds until the first of those two quiet looks
    (each look takes up to a second: the workers' broadcast reply)."""
    started = time.monotonic()
    quiet = 0
    quiet_since = started
    last_answer = started
    while quiet < 2:
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"the worker queue did not drain in {timeout:.0f} s")
        depth, busy = queue_depth(), workers_busy()
        if busy is None:  # a worker busy starting (or with a long task) may miss a broadcast: ask again
            if time.monotonic() - last_answer > 60:
                raise RuntimeError("no Celery worker answered for 60 s: is the stack running?")
            quiet = 0
            continue
        last_answer = time.monotonic()
        if on_poll is not None:
            on_poll(depth, busy)
        looked_at = time.monotonic()
        if depth == 0 and busy == 0:
            quiet_since = looked_at if quiet == 0 else quiet_since
            quiet += 1
        else:
            quiet = 0
        time.sleep(poll)
    return quiet_since - started


def bench_tenant_delete(tenant: Tenant) -> None:
    """Delete a benchmark's tenant after its figures are in: a failure is reported, never raised (the figures
    matter more than the clean-up, and a second run makes a new tenant anyway)."""
    try:
        tenant_delete(tenant=tenant)
    except DatabaseError as exc:
        print(f"could not delete the benchmark tenant {tenant.slug}: {exc}", file=sys.stderr)


def embedding_cache_empty() -> int:
    """Remove every cached embedding (a benchmark replays the same texts on every run: cached, it would
    measure the cache, not the embedder). Returns how many were removed."""
    redis_client = get_redis()
    removed = 0
    batch: list[Any] = []
    for key in redis_client.scan_iter(f"{CACHE_KEY_PREFIX}*", count=5000):
        batch.append(key)
        if len(batch) >= 5000:
            removed += int(redis_client.delete(*batch))
            batch = []
    if batch:
        removed += int(redis_client.delete(*batch))
    return removed


def dump(path: str | Path, figures: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(figures, indent=2, default=str))
