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
failed), which was 14 ms against 3 ms in session 11. For the large scopes the index stays the plan.

How the statement is planned depends on the scope's size too. The search path's statements are prepared
(apps/core/rows.bound_cursor) and, by the connection's default, run on the one generic plan PostgreSQL makes of
each (config/settings/base.py): planning the candidate statement took 1.5-2.9 ms of a typical contact's ~4.5 ms.
A generic plan cannot see how large the scope is; at 100k memories the heavy contact's candidates on a generic
plan made GET /context ten times slower (docs/benchmarks.md "Session 16"). So a scope of CUSTOM_PLAN_FROM
memories or more, or one narrowed to some types, has its candidate statement planned for its own parameters
(`plan_cache_mode` force_custom_plan, set with the ef_search), and a smaller scope's vector source sorts the
scope exactly (candidates.vector_source_sql), the plan the planner chooses for it anyway (an exact sort up to
~1,200 memories on the 100k tenant), so a generic plan cannot walk the HNSW graph for a scope of twenty."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from django.conf import settings

from apps.core.rows import CUSTOM_PLAN, settings_in_force


def large_scope() -> int:
    """Memories in a scope (the search's own count: query.scope_stats' total) from which it searches wider."""
    return int(settings.ENGRAM["VECTOR_LARGE_SCOPE"])


def large_scope_ef_search() -> int:
    """The ef_search of a large scope's candidate statement (0: the connection's, as a small scope's)."""
    return int(settings.ENGRAM["VECTOR_LARGE_SCOPE_EF_SEARCH"])


# memories in a scope from which its candidate statement is planned for its own parameters (below: the
# generic plan, its vector source an exact sort of the scope)
CUSTOM_PLAN_FROM = 1000


def ef_search_for(scope_size: int) -> int | None:
    """The ef_search a scope of `scope_size` memories is searched at, or None for the connection's."""
    wider = large_scope_ef_search()
    return wider if wider > 0 and scope_size >= large_scope() else None


def custom_plan(scope_size: int, *, narrowed: bool = False) -> bool:
    """Whether the candidate statement of a scope of `scope_size` memories is planned for its own parameters:
    from CUSTOM_PLAN_FROM memories, and always for a narrowed scope (query.Scope.narrowed: a contact's 500 facts
    may be 500 of its 20,000 memories, and a plan that reads the contact to find them costs what the 20,000 do)."""
    return narrowed or scope_size >= CUSTOM_PLAN_FROM


def statement_settings(scope_size: int, *, narrowed: bool = False) -> dict[str, str]:
    """The settings the candidate statement of a scope of `scope_size` memories runs with, beside the
    connection's: a wider ef_search (large scopes), a plan of its own (`custom_plan`)."""
    wanted: dict[str, str] = {}
    ef_search = ef_search_for(scope_size)
    if ef_search is not None:
        wanted["hnsw.ef_search"] = str(ef_search)
    if custom_plan(scope_size, narrowed=narrowed):
        wanted |= CUSTOM_PLAN
    return wanted


def searching_at(cursor: Any, ef_search: int | None) -> AbstractContextManager[None]:
    """Run the statements of the block at `ef_search` (None: as they are), then restore the connection's."""
    return settings_in_force(cursor, {} if ef_search is None else {"hnsw.ef_search": str(ef_search)})
