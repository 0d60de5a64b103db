"""`manage.py check --deploy` is clean under the production settings (HSTS, secure cookies, SSL redirect behind
a proxy, the OpenAPI schema without warnings), and those settings refuse to load without any of the variables
they have no default for."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


REQUIRED = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DATABASE_URL": "postgres://engram:secret@db.internal:5432/engram",  # not connected to by the checks
    "REDIS_URL": "redis://cache.internal:6379/0",
    "DJANGO_ALLOWED_HOSTS": "engram.example.com",
}


def _production_env(**overrides: str | None) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.production", **REQUIRED, **overrides}
    return {name: value for name, value in env.items() if value is not None}


def test_check_deploy_is_clean_under_production_settings():
    env = _production_env()
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_production_settings_refuse_to_load_without_a_variable_they_have_no_default_for(missing):
    result = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.ALLOWED_HOSTS)"],
        cwd=ROOT,
        env=_production_env(**{missing: None}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0, result.stdout
    assert f"Set the {missing} environment variable" in result.stderr, result.stderr[-2000:]


def test_a_broker_visibility_timeout_within_the_task_time_limit_is_warned_of():
    """A killed worker's task is handed out again after the visibility timeout; one within the 15-minute time
    limit would hand a task still running to a second worker."""
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(ENGRAM_BROKER_VISIBILITY_TIMEOUT="600"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0, result.stdout
    assert "engram.W030" in result.stderr and "600 s is not above the task time limit (900 s)" in result.stderr
