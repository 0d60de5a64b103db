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
from dateparser.languages.loader import default_loader
print(gc.get_freeze_count(), "apps.memories.retrieval.apis" in sys.modules, "en" in default_loader._loaded_languages)
"""


def test_importing_the_wsgi_module_imports_the_views_warms_the_read_path_and_freezes_start_up() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    frozen, views_imported, english_loaded = completed.stdout.split()
    # Django, DRF and every app: well over 50k objects that a full collection no longer walks
    assert int(frozen) > 50_000
    assert views_imported == "True"
    # dateparser's English data loaded at start-up, not by the first request that names a date (~0.2 s)
    assert english_loaded == "True"
