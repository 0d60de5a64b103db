"""The production WSGI entry point: views imported and start-up objects frozen before the first request."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, sys
import config.wsgi
from dateparser.languages.loader import default_loader
from apps.core import tokens
print(
    gc.get_freeze_count(),
    "apps.memories.retrieval.apis" in sys.modules,
    "en" in default_loader._loaded_languages,
    tokens._encoding is not None,
)
"""


READY = ("the query embedder is loaded", "the read path's statements are prepared")


def test_a_gunicorn_worker_loads_the_query_embedder_and_warms_its_connection_before_its_first_request(
    tmp_path, test_database_url
) -> None:
    """No request is sent: the worker says it is ready with the model loaded and the read path's statements
    prepared on its database connection (config/gunicorn.py's hook). Before, each worker loaded the model in its
    first search (~0.3 s; ~3 s beside a busy Celery worker) and its connection's first request paid a new
    backend's catalog reads and first plans (~10-15 ms)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "DATABASE_URL": test_database_url}
    command = [sys.executable, "-m", "gunicorn", "--config=python:config.gunicorn", "config.wsgi:application"]
    command += ["--preload", "--workers=1", f"--bind=unix:{tmp_path / 'pool.sock'}", "--error-logfile=-"]
    log = tmp_path / "gunicorn.log"
    with log.open("w") as output:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 90
            while not all(line in log.read_text() for line in READY) and time.monotonic() < deadline:
                assert server.poll() is None, log.read_text()
                time.sleep(0.2)
        finally:
            server.terminate()
            server.wait(timeout=30)
    for line in READY:
        assert line in log.read_text(), log.read_text()


def test_importing_the_wsgi_module_imports_the_views_warms_the_read_path_and_freezes_start_up() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    frozen, views_imported, english_loaded, encoding_loaded = completed.stdout.split()
    # Django, DRF and every app: well over 50k objects that a full collection no longer walks
    assert int(frozen) > 50_000
    assert views_imported == "True"
    # dateparser's English data loaded at start-up, not by the first request that names a date (~0.2 s)
    assert english_loaded == "True"
    # and the tiktoken encoding a context's lines are counted with (~0.1 s in a worker's first GET /context)
    assert encoding_loaded == "True"
