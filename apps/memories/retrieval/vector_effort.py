"""How widely the vector index searches a scope: pgvector's `hnsw.ef_search`, by the scope's size.

Every connection searches with `hnsw.ef_search` 100 (config/settings/base.py). For a contact of a few hundred
memories the planner does not use the HNSW index at all (it reads the scope through its own index and sorts
the vectors exactly), and for a few thousand the index at 100 finds the exact top 10 (recall@10 0.99 at 10k
memories). A large scope in a large table is where the graph misses: at 100k memories a 20,000-memory contact
got recall@10 0.95 (distinct texts) to 0.83 (25 paraphrases per text) at 100, and 0.984 / 0.998 at 400
(docs/benchmarks.md, "Session 17"). So the candidate statement of a scope of 10,000 memories or more runs at
400 (settings ENGRAM["VECTOR_LARGE_SCOPE"] / ["VECTOR_LARGE_SCOPE_EF_SEARCH"], from ENGRAM_VECTOR_LARGE_SCOPE and
ENGRAM_VECTOR_LARGE_SCOPE_EF_SEARCH; 0 turns it off), and every other statement keeps the connection's 100.

Not connection-wide: pgvector's cost estimate grows with ef_search, and at 400 the planner sorted a
2,000-memory contact's vectors exactly instead of searching the index (tests/core/test_row_level_security_plans.py
failed), which was 14 ms against 3 ms in session 11. For the large scopes the index stays the plan."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import connection


def large_scope() -> int:
    """Memories in a scope (the search's own count: query.scope_stats' total) from which it searches wider."""
    return int(settings.ENGRAM["VECTOR_LARGE_SCOPE"])


def large_scope_ef_search() -> int:
    """The ef_search of a large scope's candidate statement (0: the connection's, as a small scope's)."""
    return int(settings.ENGRAM["VECTOR_LARGE_SCOPE_EF_SEARCH"])


def ef_search_for(scope_size: int) -> int | None:
    """The ef_search a scope of `scope_size` memories is searched at, or None for the connection's."""
    wider = large_scope_ef_search()
    return wider if wider > 0 and scope_size >= large_scope() else None


@contextmanager
def searching_at(cursor: Any, ef_search: int | None) -> Iterator[None]:
    """Run the statements of the block at `ef_search` (None: as they are), then restore the connection's.

    In autocommit the setting is the session's and is RESET after, even when a statement failed. Inside a
    transaction it is set LOCAL and put back after the block; if a statement failed, the transaction (or
    its savepoint) is aborted and rolling it back restores the setting."""
    if ef_search is None:
        yield
        return
    local = connection.in_atomic_block
    cursor.execute(
        "SELECT current_setting('hnsw.ef_search'), set_config('hnsw.ef_search', %s, %s)", [str(ef_search), local]
    )
    previous = cursor.fetchone()[0]
    if not local:
        try:
            yield
        finally:
            cursor.execute("RESET hnsw.ef_search")
        return
    yield
    cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [previous])
