"""`make run` is safe by default (issue 32 item 2): DEBUG only when asked for, never under the WSGI server; a
random SECRET_KEY generated once and kept under var/; a bind off the loopback refused with development
settings. The last test runs the stack `make run` runs (gunicorn, worker, beat; development settings) and
tries what the review did: no request reaches a debug page."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings

from apps.memories.benchmarks.stack import running_stack

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import hashlib
import django
django.setup()
from django.conf import settings
print(settings.DEBUG, hashlib.sha256(settings.SECRET_KEY.encode()).hexdigest())
import config.wsgi
print("served")
"""


def _local(var_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": settings.DATABASE_URL,
        "REDIS_URL": settings.REDIS_URL,
        "ENGRAM_VAR_DIR": str(var_dir),
        **env,
    }
    if "DJANGO_DEBUG" not in env:
        environment.pop("DJANGO_DEBUG", None)
    environment.pop("DJANGO_SECRET_KEY", None)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


def test_development_settings_have_debug_off_and_a_secret_key_of_their_own(tmp_path):
    first = _local(tmp_path / "a")
    assert first.returncode == 0, first.stderr[-2000:]
    debug, key_hash, served = first.stdout.split()
    assert (debug, served) == ("False", "served")
    key_file = tmp_path / "a" / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(key_file.read_text().strip()) >= 50
    assert "engram-local-development-only-not-secret" not in key_file.read_text()
    again = _local(tmp_path / "a").stdout.split()[1]
    elsewhere = _local(tmp_path / "b").stdout.split()[1]
    assert again == key_hash != elsewhere  # kept across restarts, never shared between checkouts


def test_the_wsgi_server_refuses_to_start_with_debug(tmp_path):
    refused = _local(tmp_path, DJANGO_DEBUG="1")
    assert refused.returncode != 0
    assert "DEBUG is on: the WSGI server does not serve debug pages" in refused.stderr
    assert "served" not in refused.stdout


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "engram.example.com", "::"])
def test_runstack_refuses_a_bind_off_the_loopback_with_development_settings(host):
    with pytest.raises(CommandError, match="Refusing to listen on"):
        call_command("runstack", host=host, port="1")


def test_runstack_refuses_debug():
    with override_settings(DEBUG=True), pytest.raises(CommandError, match="DEBUG is on"):
        call_command("runstack", host="127.0.0.1", port="1")


@pytest.fixture(scope="module")
def stack(test_database_url) -> Iterator[str]:
    log = ROOT / "var" / "test" / "security-stack.log"
    with running_stack(
        log_path=log, database_url=test_database_url, settings_module="config.settings.local", timeout=240
    ) as base_url:
        yield base_url


DEBUG_MARKERS = ["Traceback", "URLconf", "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "settings.py", "Django Version"]


def test_the_stack_make_run_starts_serves_no_debug_page(stack):
    probes = {
        "/no-such-page/": 404,
        "/api/v1/no-such-endpoint": 404,
        "/inspector/brain/?q=%00": 400,
        "/inspector/contacts/x/?message=%00": 400,
        "/api/v1/contacts?search=%00": 400,
        "/static/%00": 404,
    }
    for path, expected in probes.items():
        response = requests.get(stack + path, timeout=30, allow_redirects=False)
        assert response.status_code == expected, (path, response.status_code, response.text[:300])
        assert not [marker for marker in DEBUG_MARKERS if marker in response.text], (path, response.text[:500])
