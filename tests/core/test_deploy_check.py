"""`manage.py check --deploy` is clean under the production settings (HSTS, secure cookies, SSL redirect behind
a proxy, the OpenAPI schema without warnings)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_is_clean_under_production_settings():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": "postgres://engram:secret@db.internal:5432/engram",  # not connected to by the checks
        "REDIS_URL": "redis://cache.internal:6379/0",
        "DJANGO_ALLOWED_HOSTS": "engram.example.com",
    }
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
