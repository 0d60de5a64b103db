"""The embedded Redis `make run` and the tests start (config/embedded.py), probed as a local user would:
a password, the dangerous commands renamed away, an unprivileged process, a server with the Lua fixes
(docs/reliability.md "Security")."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest
import redis
from django.conf import settings

from config import embedded
from tests.conftest import wait_until


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server():
    """An embedded server of this module's own (the session's may be external: REDIS_URL)."""
    profile = embedded.EmbeddedProfile(name=f"test-embedded-{_free_port()}", redis_port=_free_port())
    url = embedded.redis_url(profile)
    yield profile, url
    embedded.stop_redis(profile)
    shutil.rmtree(profile.root, ignore_errors=True)


def test_a_client_without_the_password_is_refused(server):
    profile, url = server
    with pytest.raises(redis.exceptions.AuthenticationError, match=r"Authentication required|authenticated"):
        redis.Redis(port=profile.redis_port).set("engram:probe", "1")
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(port=profile.redis_port, password="engram").ping()
    assert redis.Redis.from_url(url).ping() is True


def test_the_password_is_random_kept_0600_and_carried_by_the_url(server):
    _, url = server
    path = embedded.VAR_DIR / "redis_password"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    password = path.read_text().strip()
    assert len(password) >= 40
    assert url.startswith(f"redis://:{password}@127.0.0.1:")
    if not os.environ.get("REDIS_URL"):
        assert password in settings.REDIS_URL  # the tests' own server carries it too


@pytest.mark.parametrize(
    "command",
    [
        ["CONFIG", "GET", "requirepass"],
        ["CONFIG", "SET", "dir", "/tmp"],
        ["DEBUG", "SLEEP", "0"],
        ["FLUSHALL"],
        ["FLUSHDB"],
        ["KEYS", "*"],
    ],
    ids=["config-get", "config-set", "debug", "flushall", "flushdb", "keys"],
)
def test_dangerous_commands_are_unknown_to_the_server(server, command):
    _, url = server
    client = redis.Redis.from_url(url, decode_responses=True)
    client.set("engram:probe", "kept")
    with pytest.raises(redis.exceptions.ResponseError, match="unknown command"):
        client.execute_command(*command)
    assert client.get("engram:probe") == "kept"


def test_the_server_process_is_not_root(server):
    _, url = server
    pid = redis.Redis.from_url(url).info("server")["process_id"]
    with open(f"/proc/{pid}/status") as status:
        uids = next(line for line in status if line.startswith("Uid:")).split()[1:]
    assert set(uids) != {"0"} and "0" not in uids  # real, effective, saved and filesystem uid
    if os.geteuid() == 0:
        assert pwd.getpwuid(int(uids[0])).pw_name in {embedded.REDIS_USER, "nobody"}
    else:
        assert int(uids[0]) == os.geteuid()


def test_the_server_has_the_lua_fixes(server):
    """Valkey 9.1.2: CVE-2024-31449's proof of concept (a stack overflow in Lua's bit library) crashed the
    redis-server 6.2.14 shipped before; this one answers it and keeps serving."""
    _, url = server
    client = redis.Redis.from_url(url, decode_responses=True)
    assert client.info("server")["valkey_version"] == "9.1.2"
    assert client.eval("return bit.tohex(65535, -2147483648)", 0) == "0000FFFF"
    assert client.ping() is True


def _server_not_started_here(port: int, directory, *options: str) -> None:  # type: ignore[no-untyped-def]
    """A Redis on `port` that this code did not start (an older checkout's, another checkout's), as its starter."""
    subprocess.run(
        [
            embedded.redis_executable(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--daemonize",
            "yes",
            "--save",
            "",
            "--dir",
            str(directory),
            *options,
        ],
        check=True,
        capture_output=True,
    )


def test_a_server_left_without_a_password_is_replaced(tmp_path):
    """A checkout's server from before this change (no password, running as its starter) is shut down and
    started again protected, on the same port."""
    profile = embedded.EmbeddedProfile(name=f"test-embedded-{_free_port()}", redis_port=_free_port())
    _server_not_started_here(profile.redis_port, tmp_path)
    try:
        wait_until(lambda: redis.Redis(port=profile.redis_port).ping())
        url = embedded.redis_url(profile)
        with pytest.raises(redis.exceptions.AuthenticationError):
            redis.Redis(port=profile.redis_port).ping()
        assert redis.Redis.from_url(url).ping() is True
    finally:
        embedded.stop_redis(profile)
        shutil.rmtree(profile.root, ignore_errors=True)


def test_a_port_held_by_another_checkouts_server_is_a_clear_error_and_that_server_is_left_alone(tmp_path):
    """Two checkouts on one machine, the same default port: the second's tests used to wait, fail to bind and
    report "Redis did not start (see redis.log)"; they now say who holds the port and which setting moves them."""
    profile = embedded.EmbeddedProfile(name=f"test-embedded-{_free_port()}", redis_port=_free_port())
    _server_not_started_here(profile.redis_port, tmp_path, "--requirepass", "another-checkouts-password")
    theirs = redis.Redis(port=profile.redis_port, password="another-checkouts-password")
    try:
        wait_until(lambda: theirs.ping())
        with pytest.raises(RuntimeError, match=r"another checkout's Redis.*ENGRAM_TEST_REDIS_PORT"):
            embedded.redis_url(profile)
        assert theirs.ping() is True
    finally:
        with contextlib.suppress(redis.exceptions.ConnectionError):
            theirs.shutdown(nosave=True)
        shutil.rmtree(profile.root, ignore_errors=True)


@pytest.fixture
def checkouts(tmp_path):
    """Checkouts on this machine with no port set: each its own var directory (its own password, its own
    remembered port). Their servers are stopped afterwards."""
    made: list[embedded.EmbeddedProfile] = []

    def checkout(name: str) -> embedded.EmbeddedProfile:
        profile = embedded.EmbeddedProfile(name="test", var_dir=tmp_path / name / "var")
        made.append(profile)
        return profile

    yield checkout
    for profile in made:
        embedded.stop_redis(profile)


def _port(url: str) -> int:
    return int(redis.Redis.from_url(url).get_connection_kwargs()["port"])


def test_without_a_set_port_each_checkout_chooses_its_own_and_reuses_it(checkouts):
    first, second = checkouts("first"), checkouts("second")
    first_url, second_url = embedded.redis_url(first), embedded.redis_url(second)
    first_port, second_port = _port(first_url), _port(second_url)
    assert first_port != second_port
    assert first.redis_port_file.read_text() == f"{first_port}\n"
    assert second.redis_port_file.read_text() == f"{second_port}\n"
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert 10_000 <= first_port < ephemeral_low and 10_000 <= second_port < ephemeral_low
    assert embedded.redis_url(first) == first_url  # attached to while it runs

    embedded.stop_redis(first)
    embedded.stop_redis(second)
    assert not embedded._port_open(first_port) and not embedded._port_open(second_port)
    assert embedded.redis_url(first) == first_url  # started again on its own port
    assert embedded.redis_url(second) == second_url
    assert redis.Redis.from_url(first_url).ping() is True and redis.Redis.from_url(second_url).ping() is True


def test_a_remembered_port_held_by_another_checkouts_server_moves_and_that_server_is_left_alone(checkouts):
    """Two checkouts once chose the same port (or one's var/ was copied): the second to start finds the first's
    server there (it refuses the second's password), chooses another free port and remembers it."""
    first, second = checkouts("first"), checkouts("second")
    first_url = embedded.redis_url(first)
    theirs = redis.Redis.from_url(first_url)
    theirs.set("engram:probe", "theirs")
    second.root.mkdir(parents=True)
    second.redis_port_file.write_text(f"{_port(first_url)}\n")

    second_url = embedded.redis_url(second)

    assert _port(second_url) != _port(first_url)
    assert second.redis_port_file.read_text() == f"{_port(second_url)}\n"
    assert redis.Redis.from_url(second_url).ping() is True
    assert theirs.get("engram:probe") == b"theirs"  # the first checkout's server runs on, untouched
    assert embedded.redis_url(second) == second_url


def test_a_set_port_wins_over_the_remembered_one_and_keeps_the_clear_error(tmp_path, monkeypatch):
    set_port, remembered_port = _free_port(), _free_port()
    monkeypatch.setenv("ENGRAM_TEST_REDIS_PORT", str(set_port))
    profile = embedded.embedded_profile("test", "ENGRAM_TEST_REDIS_PORT", var_dir=tmp_path / "var")
    assert profile.redis_port == set_port
    profile.root.mkdir(parents=True)
    profile.redis_port_file.write_text(f"{remembered_port}\n")
    try:
        assert _port(embedded.redis_url(profile)) == set_port
    finally:
        embedded.stop_redis(profile)
    assert not embedded._port_open(set_port) and not embedded._port_open(remembered_port)

    _server_not_started_here(set_port, tmp_path, "--requirepass", "another-checkouts-password")
    theirs = redis.Redis(port=set_port, password="another-checkouts-password")
    try:
        wait_until(lambda: theirs.ping())
        with pytest.raises(RuntimeError, match=r"another checkout's Redis.*ENGRAM_TEST_REDIS_PORT"):
            embedded.redis_url(profile)  # no other port is chosen for a set one
        assert profile.redis_port_file.read_text() == f"{remembered_port}\n"
        assert theirs.ping() is True
    finally:
        with contextlib.suppress(redis.exceptions.ConnectionError):
            theirs.shutdown(nosave=True)

    monkeypatch.setenv("ENGRAM_TEST_REDIS_PORT", "")
    assert embedded.embedded_profile("test", "ENGRAM_TEST_REDIS_PORT").redis_port is None  # empty: unset


def test_the_session_its_cache_and_broker_use_the_test_profiles_port():
    """What the settings hand to the cache, the broker and every process the tests start (worker, stacks:
    REDIS_URL) is the port TEST names: the set one, else the one this checkout remembered."""
    if os.environ.get("REDIS_URL"):
        pytest.skip("an external Redis (REDIS_URL): no embedded port")
    port = embedded.TEST.redis_port
    if port is None:
        port = embedded.remembered_redis_port(embedded.TEST)
        assert port is not None
    assert _port(settings.REDIS_URL) == port
    assert settings.CELERY_BROKER_URL == settings.CACHES["default"]["LOCATION"] == settings.REDIS_URL
    assert redis.Redis.from_url(settings.REDIS_URL).ping() is True
