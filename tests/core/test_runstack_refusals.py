"""`make run` twice: the second stack is refused before anything starts, and never takes the first one's servers
down with it (found 2026-12-01: a second `make run` of the checkout started a second beat, which refused the
database's pidfile and exited; runstack then stopped the rest — and the embedded PostgreSQL and Redis the first
stack was using — and exited 0).

The last test runs `manage.py runstack` as `make run` does, with embedded servers of its own under a temporary
var/ directory (a real PostgreSQL and Redis, not the tests' ones)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from apps.core.management.commands import runstack
from apps.memories.benchmarks.stack import running_stack
from config import embedded

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def var_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """runstack's var/ (its beat's pidfile) in a directory of this test's own."""
    monkeypatch.setattr(embedded, "VAR_DIR", tmp_path)
    return tmp_path


@pytest.fixture
def beat_like() -> Iterator[subprocess.Popen[bytes]]:
    """A live process whose command line names Celery's beat, as the one a running stack has."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)", "celery", "beat"],
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"up\n"  # its command line is the beat's from here on (exec done)
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


def test_a_pidfile_names_the_running_beat_or_is_removed_as_stale(var_dir, beat_like):
    pidfile = var_dir / "celerybeat-x.pid"
    assert runstack.beat_holding(pidfile) is None  # none yet

    pidfile.write_text(f"{beat_like.pid}\n")
    assert runstack.beat_holding(pidfile) == beat_like.pid
    assert pidfile.exists()

    pidfile.write_text(f"{os.getpid()}\n")  # a live process that is no beat: the number was reused
    assert runstack.beat_holding(pidfile) is None
    assert not pidfile.exists()

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    pidfile.write_text(f"{gone.pid}\n")  # the stack was killed: its beat is gone
    assert runstack.beat_holding(pidfile) is None
    assert not pidfile.exists()


def test_a_second_stack_on_the_database_is_refused_and_the_first_beat_keeps_its_pidfile(var_dir, beat_like):
    runstack.beat_pidfile().write_text(f"{beat_like.pid}\n")
    with pytest.raises(CommandError, match="Another stack already runs on database") as refused:
        call_command("runstack", host="127.0.0.1", port="0")
    assert str(beat_like.pid) in str(refused.value)
    assert "DATABASE_URL" in str(refused.value)
    assert runstack.beat_pidfile().read_text().strip() == str(beat_like.pid)
    assert beat_like.poll() is None


def test_a_taken_port_is_refused_before_anything_starts(var_dir, taken_port):
    with pytest.raises(CommandError, match=f"Cannot listen on 127.0.0.1:{taken_port} .*--port, ENGRAM_PORT"):
        call_command("runstack", host="127.0.0.1", port=str(taken_port))


def _embedded(var_dir: Path, *arguments: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("DATABASE_", "REDIS_"))}
    environment |= {"ENGRAM_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "config.settings.local"}
    environment.pop("ENGRAM_REDIS_PORT", None)  # a port of this directory's own, chosen and remembered
    environment.pop("DJANGO_DEBUG", None)
    environment |= extra or {}
    return subprocess.run(
        [sys.executable, *arguments], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=180
    )


def test_a_refused_make_run_leaves_running_servers_running_and_stops_those_it_started(tmp_path, taken_port):
    var_dir = tmp_path / "var"
    pgdata = var_dir / "dev" / "pgdata"
    try:
        started = _embedded(var_dir, "-m", "config.embedded", "start")
        assert started.returncode == 0, started.stderr[-2000:]
        database_url, redis_url = started.stdout.split()[-2:]

        # the servers ran before: a refused `make run` leaves them as they were
        refused = _embedded(var_dir, "manage.py", "runstack", "--port", str(taken_port), "--no-seed")
        assert refused.returncode != 0
        assert f"Cannot listen on 127.0.0.1:{taken_port}" in refused.stderr
        assert (pgdata / "postmaster.pid").exists()
        again = _embedded(var_dir, "-m", "config.embedded", "start")  # attaches: the same servers answer
        assert again.stdout.split()[-2:] == [database_url, redis_url]

        # nothing ran: what the refused command started for itself it stops again
        stopped = _embedded(var_dir, "-m", "config.embedded", "stop")
        assert stopped.returncode == 0, stopped.stderr[-2000:]
        assert not (pgdata / "postmaster.pid").exists()
        refused = _embedded(var_dir, "manage.py", "runstack", "--port", str(taken_port), "--no-seed")
        assert refused.returncode != 0
        assert "Cannot listen on" in refused.stderr
        assert not (pgdata / "postmaster.pid").exists()
        redis_port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
        assert not embedded._port_open(redis_port)
    finally:
        _embedded(var_dir, "-m", "config.embedded", "stop")


def test_a_process_of_the_stack_that_exits_on_its_own_stops_the_rest_and_fails_the_command(test_database_url, tmp_path):
    log = tmp_path / "stack.log"
    with (
        pytest.raises(RuntimeError, match=r"exited before it was healthy \(CommandError: front exited on its own"),
        running_stack(
            log_path=log,
            database_url=test_database_url,
            settings_module="config.settings.local",
            timeout=240,
            extra_env={"ENGRAM_FRONT_THREADS": "none"},  # gunicorn refuses it: the front exits at once
        ),
    ):
        pass
    output = log.read_text(errors="replace")
    assert "front exited; stopping the rest." in output
    assert "Stopped." in output  # the web pools, the worker and beat were stopped before the command failed


@pytest.mark.parametrize(
    ("option", "given", "named"),
    [
        ("port", "80a", "--port (or ENGRAM_PORT)"),
        ("port", "70000", "--port (or ENGRAM_PORT)"),
        ("web_threads", "0", "--web-threads (or ENGRAM_WEB_THREADS)"),
        ("write_nice", "-5", "--write-nice (or ENGRAM_WRITE_NICE)"),
        ("concurrency", "two", "--concurrency (or ENGRAM_WORKER_CONCURRENCY)"),
    ],
)
def test_a_number_that_is_not_one_is_refused_with_both_places_it_may_come_from(var_dir, option, given, named):
    with pytest.raises(
        CommandError, match=rf"{re.escape(named)} must be a whole number from \d+ to \d+, not '{given}'"
    ):
        call_command("runstack", host="127.0.0.1", **{option: given})


def test_a_number_from_the_environment_is_checked_as_the_command_line_is(test_database_url, tmp_path):
    """ENGRAM_PORT=80a make run: one line saying what to fix, no traceback (it was a ValueError's), no beat."""
    servers = {"DATABASE_URL": test_database_url, "REDIS_URL": settings.REDIS_URL}
    refused = _embedded(tmp_path, "manage.py", "runstack", "--no-seed", extra={**servers, "ENGRAM_PORT": "80a"})
    assert refused.returncode == 1
    assert "--port (or ENGRAM_PORT) must be a whole number from 0 to 65535, not '80a'." in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not list(tmp_path.glob("celerybeat-*.pid"))  # nothing of the stack started


def test_zero_workers_means_the_machine_s_default():
    options = {"port": "8000", "concurrency": "2", "web_workers": "0", "web_threads": "1", "read_workers": 0}
    options |= {"write_workers": " 3 ", "write_nice": "10"}
    assert runstack.numbers(options) == {
        "port": 8000,
        "concurrency": 2,
        "web_workers": runstack.web_workers(),
        "web_threads": 1,
        "read_workers": runstack.read_workers(),
        "write_workers": 3,
        "write_nice": 10,
    }


def test_an_int8_graph_this_cpu_runs_unlike_the_package_graph_is_refused_before_anything_starts(
    var_dir, tmp_path, monkeypatch
):
    """A CPU whose integer kernels give other vectors (stood for by an agreement no graph reaches): `make run`
    says so in one line, naming the variable and the way out, before migrating or starting a process."""
    from django.test import override_settings

    from apps.core import embeddings

    monkeypatch.setattr(embeddings, "_onnx_runtimes", {})
    monkeypatch.setattr(embeddings, "MIN_AGREEMENT", 0.99999)
    engram = {**settings.ENGRAM, "EMBEDDING_GRAPH": "int8", "MODEL_DIR": str(tmp_path / "models")}
    with override_settings(ENGRAM=engram), pytest.raises(CommandError, match=r"use ENGRAM_EMBEDDING_GRAPH=package$"):
        call_command("runstack", host="127.0.0.1", no_seed=True)
    assert not list(var_dir.glob("celerybeat-*.pid"))  # nothing of the stack started
