"""The production WSGI entry point: views imported and start-up objects frozen before the first request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, sys
import config.wsgi
print(gc.get_freeze_count(), "apps.memories.retrieval.apis" in sys.modules)
"""


def test_importing_the_wsgi_module_imports_the_views_and_freezes_what_start_up_allocated() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    frozen, views_imported = completed.stdout.split()
    # Django, DRF and every app: well over 50k objects that a full collection no longer walks
    assert int(frozen) > 50_000
    assert views_imported == "True"
