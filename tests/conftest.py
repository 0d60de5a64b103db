"""Test session wiring: real PostgreSQL + pgvector and real Redis (embedded, started by
config.settings.test, stopped here), and a real Celery worker process for the tests that need one."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import environ
import pytest
from django.conf import settings
from django.db import connection
from rest_framework.test import APIClient

from tests.factories import ApiKeyFactory, TenantFactory
from tests.redis_keys import redis_clear

ROOT = Path(__file__).resolve().parent.parent

# Every settings module starts connections bound to no tenant, as the app role (row-level security,
# apps/core/tenancy.py). The test process is the operator: it creates the test database and migrates it, its
# fixtures write and its assertions read across tenants — so its own connection logs in as the maintenance role
# (the owner of the tables) and starts at `all`, as manage.py's commands do. Requests and tasks bind as they would;
# the processes tests start (worker, stacks, mcp_stdio) log in as the app role (`_test_database_url`).
APP_USER = settings.DATABASES["default"]["USER"]
_default, _maintenance = settings.DATABASES["default"], settings.DATABASES["maintenance"]
_default.update({key: _maintenance[key] for key in ("USER", "PASSWORD")})
_default["OPTIONS"]["options"] = _default["OPTIONS"]["options"].replace("app.tenant_id=none", "app.tenant_id=all")
_maintenance["TEST"] = {"MIRROR": "default"}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # only the servers this session started; external DATABASE_URL / REDIS_URL are left alone
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    from config import embedded

    if not os.environ.get("REDIS_URL"):
        embedded.stop_redis(embedded.TEST)
    if not os.environ.get("DATABASE_URL"):
        embedded.stop_postgres(embedded.TEST)


UNIT_TESTS = ROOT / "tests" / "unit"


@pytest.fixture(scope="session", autouse=True)
def _flush_outlasts_a_live_stacks_deadlock() -> Iterator[None]:
    """A transactional test's teardown TRUNCATEs every table while a live stack (gunicorn, worker, beat started
    by runstack on the test database) may be inside a transaction of its own: beat saving a schedule takes a
    key-share lock on its crontab table, and PostgreSQL breaks the cycle by failing one side, sometimes the
    TRUNCATE (seen in CI). The flush is retried then; any other error, or a fourth deadlock, still fails."""
    from django.core.management.commands import flush
    from django.db import OperationalError

    original = flush.Command.handle

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        for attempt in range(4):
            try:
                return original(self, *args, **options)
            except Exception as exc:  # CommandError wraps the OperationalError
                cause = exc if isinstance(exc, OperationalError) else exc.__cause__
                if attempt == 3 or "deadlock detected" not in str(cause or ""):
                    raise
                time.sleep(0.2 * (attempt + 1))
        return None

    flush.Command.handle = handle
    yield
    flush.Command.handle = original


@pytest.fixture(autouse=True)
def _clean_redis(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test starts with an empty Redis (real server, flushed), like each starts with an empty DB; the
    unit layer (tests/unit: pure modules) touches neither."""
    if UNIT_TESTS not in request.node.path.parents:
        redis_clear()
    yield


@pytest.fixture
def tenant():
    return TenantFactory()


@pytest.fixture
def other_tenant():
    return TenantFactory()


@pytest.fixture
def issued_key(tenant):
    return ApiKeyFactory(tenant=tenant)


@pytest.fixture
def api(issued_key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.plaintext}")
    return client


@pytest.fixture
def other_api(other_tenant) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {ApiKeyFactory(tenant=other_tenant).plaintext}")
    return client


def _test_database_url(user: str | None = None, password: str | None = None) -> str:
    """The test database's URL for the app role (what the worker and the stacks tests start log in as), or for
    `user`; the maintenance role's goes to DATABASE_MAINTENANCE_URL of the processes tests start."""
    from django.db import connection

    params = connection.settings_dict
    host, user = params["HOST"], user or APP_USER
    password = password if password is not None else settings.DATABASES["maintenance"]["PASSWORD"]
    if user == APP_USER:
        password = environ.Env.db_url_config(settings.DATABASE_URL).get("PASSWORD") or ""
    if host.startswith("/"):
        return f"postgresql://{user}:@/{params['NAME']}?host={host}"
    return f"postgresql://{user}:{password}@{host}:{params['PORT'] or 5432}/{params['NAME']}"


def start_celery_worker(
    *, database_url: str, name: str = "test", queues: str = "celery", extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A real `celery worker` process consuming from the test Redis and writing to the test database."""
    log_path = ROOT / "var" / "test" / f"celery-{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url,
        "REDIS_URL": settings.REDIS_URL,
        **(extra_env or {}),
    }
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool=solo",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                f"--hostname={name}@%h",
                "-Q",
                queues,
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while b"ready." not in log_path.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"celery worker did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    return process


def stop_celery_worker(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def test_database_url(django_db_setup, django_db_blocker) -> str:
    with django_db_blocker.unblock():
        # the processes tests start switch to the owner's login for maintenance work (apps/core/tenancy.py)
        os.environ["DATABASE_MAINTENANCE_URL"] = _test_database_url(settings.DATABASES["default"]["USER"])
        return _test_database_url()


@pytest.fixture(scope="session")
def celery_worker_process(test_database_url) -> Iterator[subprocess.Popen[bytes]]:
    process = start_celery_worker(database_url=test_database_url)
    yield process
    stop_celery_worker(process)


@contextmanager
def held_elsewhere(lock: Callable[[], AbstractContextManager[object]]) -> Iterator[None]:
    """Run the block while another thread, on its own database connection, is inside `lock()` (a row lock,
    an advisory lock: what a concurrent request or worker would hold). A failure in that thread fails the
    test."""
    holding, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def hold() -> None:
        try:
            with lock():
                holding.set()
                release.wait(10)
        except BaseException as exc:  # reported by the test thread below
            failures.append(exc)
        finally:
            connection.close()

    other = threading.Thread(target=hold)
    other.start()
    try:
        assert holding.wait(10) or failures, "the other thread never took the lock"
        if failures:
            raise failures[0]
        yield
    finally:
        release.set()
        other.join()
    if failures:
        raise failures[0]


def wait_until(predicate, *, timeout: float = 20.0, interval: float = 0.1):
    """Poll a real side effect (a row written by the worker) instead of sleeping a fixed time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    return predicate()


@pytest.fixture(autouse=True)
def _expose_key_prefix(request):
    """Tests that assert the actor of a revision read it from `api.key_prefix`."""
    if "api" in request.fixturenames:
        client = request.getfixturevalue("api")
        client.key_prefix = request.getfixturevalue("issued_key").prefix
