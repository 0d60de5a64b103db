"""The floor of GET /context on this machine: the parts every answer pays whatever the ranking does.

A context for a query needs at least (1) a request through the web tier, authenticated, that reads the contact
(what GET /contacts/{id} does: the front, a read-pool worker, the API key, the tenant binding, one row), (2) the
query's embedding (uncached: a new message), and (3) the vector index searched over the contact's memories at
the depth the search uses for a scope of its size (`vector_effort`). `bench_latency --floor` times each apart,
on the same queries, and prints them with the sum of their medians: the median no GET /context of that contact
can beat on this machine with today's embedder and index, before any keyword, entity or time source, neighbour
turn, feature, ranking or prompt assembly. A p95 target below that sum cannot be met by tuning the rest.

The embedding is timed twice. Back to back, the model's weights stay in the CPU's caches: the floor's figure. In
a server, PostgreSQL's work and the rest of the request run between two embeddings and evict them, and the same
call takes longer: 6.6 ms against 3.5–3.8 on the machine of session 57 (docs/benchmarks.md). `cold=True` writes
COLD_EVICT_BYTES between two calls to time what a request pays; it is printed beside the floor, not in its sum.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from apps.contacts.models import Contact
from apps.core.embeddings import CachedEmbedder, get_embedder, vector_literal
from apps.core.rows import bound_cursor
from apps.memories.retrieval import candidates, vector_effort
from apps.memories.retrieval.query import Scope
from apps.tenants.models import Tenant


@dataclass(frozen=True)
class Part:
    name: str
    timings_ms: tuple[float, ...]

    @property
    def p50(self) -> float:
        return statistics.median(self.timings_ms)

    @property
    def p95(self) -> float:
        return float(np.percentile(self.timings_ms, 95))

    def line(self) -> str:
        return f"{self.name} p50 {self.p50:.1f} / p95 {self.p95:.1f} ms"


COLD_EVICT_BYTES = 256 * 2**20  # written between two cold calls: more than a 2-vCPU guest's share of the caches


def embedding_part(texts: Sequence[str], *, cold: bool = False) -> Part:
    """Each text embedded alone by the configured embedder, past its cache (a new message each time); `cold`:
    with the CPU's caches overwritten before each call (COLD_EVICT_BYTES), as a request finds them."""
    embedder = get_embedder()
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    inner.embed_batch([texts[0]])  # loaded before the clock starts
    evictor = np.zeros(COLD_EVICT_BYTES // 8) if cold else None
    timings = []
    for text in texts:
        if evictor is not None:
            evictor += 1.0  # every cache line written: the weights are out of the caches
        began = time.perf_counter()
        inner.embed_batch([text])
        timings.append((time.perf_counter() - began) * 1000)
    return Part("query embedding, caches cold" if cold else "query embedding", tuple(timings))


def vector_part(*, tenant: Tenant, contact: Contact, vectors: np.ndarray, scope_size: int) -> Part:
    """The candidate statement's vector source alone (the same SQL, scope and limit, prepared as the search
    prepares it, at the ef_search the search uses for a scope of `scope_size`), one statement per vector."""
    scope_sql, params = Scope(tenant, contact, (), include_compressed=True).sql()
    sql = candidates.vector_source_sql(scope_sql, exact=not vector_effort.custom_plan(scope_size))
    timings = []
    with bound_cursor(vector_effort.statement_settings(scope_size)) as cursor:
        for vector in vectors:
            arguments = {**params, "vector": vector_literal(vector), "vector_limit": candidates.VECTOR_CANDIDATES}
            began = time.perf_counter()
            cursor.execute(sql, arguments)
            cursor.fetchall()
            timings.append((time.perf_counter() - began) * 1000)
    return Part("vector index alone", tuple(timings))


def summary(parts: Sequence[Part], *, beside: Sequence[Part] = ()) -> str:
    """The parts and the sum of their medians; `beside`: printed after the sum, not in it."""
    return (
        "floor of GET /context (heavy contact): "
        + "; ".join(part.line() for part in parts)
        + f" | sum of the medians {sum(part.p50 for part in parts):.1f} ms"
        + "".join(f" | beside it: {part.line()}" for part in beside)
    )
