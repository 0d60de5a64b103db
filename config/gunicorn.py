"""gunicorn's hooks for the web pools: `gunicorn -c python:config.gunicorn config.wsgi --preload …` (`make run`'s
read and write pools, and the production commands of docs/architecture.md)."""

from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:
    """Each worker loads the query embedder, then opens its database connection and runs the read path's
    statements on it, before it accepts a request (config.wsgi.warm_embedder, warm_database)."""
    from config.wsgi import warm_database, warm_embedder

    if warm_embedder():
        worker.log.info("Worker %s: the query embedder is loaded", worker.pid)
    if warm_database():
        worker.log.info("Worker %s: the read path's statements are prepared", worker.pid)
