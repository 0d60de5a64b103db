import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = get_wsgi_application()


def refuse_debug() -> None:
    """The WSGI server (gunicorn: `make run`, production) never serves Django's debug pages: they show the
    settings (database and Redis URLs), paths, headers and every URL pattern to whoever triggers an error."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    if settings.DEBUG:
        raise ImproperlyConfigured(
            "DEBUG is on: the WSGI server does not serve debug pages. Unset DJANGO_DEBUG, or use "
            "`manage.py runserver` on 127.0.0.1 to debug."
        )


refuse_debug()


def warm_read_path() -> None:
    """Load now what the first request of each worker would otherwise load: dateparser's language data for
    the question's time expressions (~0.2 s; `time_window.warm`), the gazetteer ingest indexes places with
    (~0.4 s; `places.warm`) and the tiktoken encoding every context's lines are counted with (~0.1 s, ~0.25 s
    in a worker's first GET /context beside others: `tokens.get_encoding`; docs/benchmarks.md, "Session 61").
    Under gunicorn --preload the master pays it once and every worker inherits it."""
    from apps.core import tokens
    from apps.memories.extraction import places
    from apps.memories.retrieval.signals import time_window

    time_window.warm()
    places.warm()
    tokens.get_encoding()


warm_read_path()


def warm_embedder() -> bool:
    """Load the local query embedder in a worker before it serves its first request. ONNX Runtime's session is
    not fork-safe, so it is built after the fork, not in the preloading master; left to each worker's first
    search, the model's load and first run cost that search ~0.3 s on a quiet machine and 3 s beside a worker
    consolidating a conversation just ingested (docs/benchmarks.md, "Session 61"). A remote embedder (OpenAI) is
    not called here (False). gunicorn runs it in each worker once the application is loaded (`config/gunicorn.py`)."""
    from apps.core.embeddings import LocalOnnxEmbedder, get_embedder

    inner = get_embedder().inner
    if not isinstance(inner, LocalOnnxEmbedder):
        return False
    inner.embed_batch(["warm up"])  # the inner embedder: no cache entry written
    return True


def warm_database() -> bool:
    """Open this worker's database connection and run the read path's statements on it once
    (apps.context.services.read_path_warm_up), so that its first request does not pay a new PostgreSQL backend's
    catalog reads and first plans (~10-15 ms; docs/benchmarks.md, "Session 62"). Not in the preloading master: a
    connection must not be shared by the forked workers. It only saves time: whatever makes it fail (a database
    that cannot be reached now) is no reason for the worker not to start — gunicorn stops when a worker cannot
    boot. Its first request then connects as it always did (False, logged with the error)."""
    import logging
    from contextlib import suppress

    from django.db import connection

    from apps.context.services import read_path_warm_up

    try:
        read_path_warm_up()
    except Exception:
        logger = logging.getLogger(__name__)
        logger.warning("The read path's warm-up failed; the worker starts without it", exc_info=True)
        with suppress(Exception):
            connection.close()  # whatever state the failure left it in: the first request opens its own
        return False
    return True


def freeze_startup_objects() -> int:
    """Import every view now (Django imports the URLconf lazily, on the first request), then move what
    start-up allocated (~185k objects: modules, classes, functions) out of the collector's reach. Each
    automatic full collection walked all of them, stalling the request it fell in by 93–173 ms on the
    development machine (docs/benchmarks.md); frozen, it walks only what requests allocate.
    Under gunicorn --preload the frozen pages also stay shared between workers. Returns the count frozen."""
    get_resolver().url_patterns  # noqa: B018 — the attribute access is what imports the views
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


freeze_startup_objects()
