"""GET /context and POST /memories/search latency at 1k, 10k and 100k memories in one tenant.

Synthetic but realistically shaped data: 20% of the tenant's memories belong to one heavy contact (the one
GET /context is asked for, relationship stage "deep": a 2,000-token budget), 20% are tenant-level brain
memories (what /memories/search searches without contact_id), the rest are spread over contacts of 100.
Embeddings: a pool of real all-MiniLM-L6-v2 vectors of distinct synthetic memories, each row a pool vector
plus small noise (re-normalised), so the vector index sees a realistic distribution without embedding 100k
texts. Rows carry what ingest gives real ones: episodes a context_vector (the words of the turns around
them), and links to the people and places their text names (one entity per scope and name).

Queries are chat-like messages of 7-25 tokens (`corpus.queries`). Before each timed request the query's
entry in the embedding cache is evicted, so every measured request computes its query embedding. (Until
2026-11-23 the queries were salted with their index instead, and the same texts were asked at every size
and by both endpoints: only the first size's GET /context computed its embeddings, every later figure read
them from the cache; those rows had no context_vector and no entity links either. docs/benchmarks.md.)

After each growth step the command does what the running system does on its own before measuring:
ANALYZE (autovacuum's job after a bulk load) and the lexicon refresh of the two measured scopes (the
`lexicon_refresh_task` a worker runs when a search finds a large scope without a fresh lexicon).
"""

from __future__ import annotations

import statistics
import time
from argparse import ArgumentParser
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand
from django.db import DatabaseError, connection
from django.utils import timezone
from django.utils.text import slugify
from rest_framework.test import APIClient
from tqdm import tqdm

from apps.contacts.models import Contact, ContactState
from apps.core.embeddings import CachedEmbedder, cache_scope, content_hash, get_embedder
from apps.core.redis import get_redis
from apps.entities.models import Entity
from apps.memories.benchmarks import as_in_production, hnsw_bloat_note
from apps.memories.benchmarks.corpus import NAMES, PLACES, memory_texts, queries
from apps.memories.benchmarks.stack import EngramClient, running_stack
from apps.memories.models import Memory, MemoryEntity
from apps.memories.retrieval.lexicon import scope_lexicon_refresh
from apps.tenants.services import api_key_create, tenant_create, tenant_delete
from config.embedded import VAR_DIR

POOL = 4000
INSERT_BATCH = 2000


class Command(BaseCommand):
    help = "Benchmark: GET /context and POST /memories/search p50/p95 at growing tenant sizes."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--sizes", default="1000,10000,100000")
        parser.add_argument("--requests", type=int, default=500, help="requests per figure (p95 of 500: 25 above it)")
        parser.add_argument("--keep", action="store_true")
        parser.add_argument("--pool", type=int, default=POOL, help="distinct synthetic memories to embed and vary")
        parser.add_argument(
            "--via-http",
            action="store_true",
            help="ask through HTTP against the stack `make run` starts (started here unless --url), not in-process",
        )
        parser.add_argument("--url", default="", help="with --via-http: the running stack to ask")

    def handle(self, *args: Any, **options: Any) -> None:
        sizes = sorted(int(size) for size in options["sizes"].split(","))
        if note := hnsw_bloat_note():
            self.stdout.write(note)
        reference = self._machine_reference()
        self.stdout.write(f"machine reference (one query embedded back to back, uncached): p50 {reference:.2f} ms")
        run = timezone.now().strftime("%Y%m%d%H%M%S")
        tenant = tenant_create(name=f"bench latency {run}", slug=f"bench-latency-{run}")
        key = api_key_create(tenant=tenant, name="bench").plaintext
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        get_context, search_brain = self._calls(client, key, options)
        heavy = Contact.objects.create(tenant=tenant, external_id="heavy", display_name="Heavy User")
        ContactState.objects.create(contact=heavy, tenant=tenant, relationship_stage="deep")
        embedder = get_embedder()
        texts = memory_texts(options["pool"])
        self.stdout.write(f"embedding a pool of {len(texts)} distinct memories…")
        pool = embedder.embed_batch(texts)
        rng = np.random.default_rng(1)
        rows_done = 0
        light_contacts: list[Contact] = []
        entities: dict[tuple[Any, str, str], Entity] = {}
        lines = []
        try:
            for size in sizes:
                self._grow(tenant, heavy, light_contacts, entities, texts, pool, rng, rows_done, size)
                rows_done = size
                # the steady state a search meets in production: the new rows vacuumed and analysed, so that
                # no autovacuum of this bulk insert (an HNSW index vacuum takes a core for seconds on two)
                # starts in the middle of the measurement, every table the insert grew (the entity links
                # too: left to autovacuum they were vacuumed during the measurement, and their index-only
                # scans visited the heap until then), and the bulk insert's dirty pages written out, not
                # flushed by the checkpointer while measuring
                self.stdout.write("vacuuming, analysing and checkpointing…")
                with connection.cursor() as cursor:
                    cursor.execute(
                        "VACUUM (ANALYZE) memories_memory, memories_memoryentity, entities_entity, contacts_contact"
                    )
                    try:
                        cursor.execute("CHECKPOINT")  # superuser or pg_checkpoint (the embedded server: yes)
                    except DatabaseError as exc:
                        self.stdout.write(f"  (no CHECKPOINT: {exc}; figures may include background writes)")
                for contact_id in (heavy.pk, None):
                    scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact_id)
                with as_in_production():
                    heavy_scope = cache_scope(tenant_id=tenant.pk, contact_id=heavy.pk)
                    context = self._measure(client, options["requests"], get_context, heavy_scope)
                    search = self._measure(
                        client, options["requests"], search_brain, cache_scope(tenant_id=tenant.pk, contact_id=None)
                    )
                line = (
                    f"{size:>7} memories | GET /context (heavy contact, {size // 5} memories): p50 {context[0]:.1f} ms "
                    f"p95 {context[1]:.1f} ms | POST /memories/search (brain, {size // 5}): p50 {search[0]:.1f} ms "
                    f"p95 {search[1]:.1f} ms"
                )
                lines.append(line)
                self.stdout.write(line)
        finally:
            self._stack.close()
            if not options["keep"]:
                tenant_delete(tenant=tenant)
        footer = (
            f"machine reference (one query embedded back to back, uncached): p50 {reference:.2f} ms before, "
            f"{self._machine_reference():.2f} ms after"
        )
        self.stdout.write("\n".join(["", "summary:", *lines, footer]))

    def _calls(self, client: APIClient, key: str, options: dict[str, Any]) -> tuple[Any, Any]:
        """GET /context of the heavy contact and a brain search: in process (DRF's test client), or with
        --via-http as a client gets them (a real socket, gunicorn, the stack's own processes)."""
        self._stack = ExitStack()
        if not options["via_http"]:
            return (
                lambda q: client.get("/api/v1/context/heavy", {"query": q}),
                lambda q: client.post("/api/v1/memories/search", {"query": q, "top_k": 10}, format="json"),
            )
        base_url = options["url"] or self._stack.enter_context(
            running_stack(log_path=VAR_DIR / "bench" / "latency.log")
        )
        self.stdout.write(f"asking {base_url} over HTTP")
        http = EngramClient(base_url, key)
        self._stack.callback(http.close)
        return (
            lambda q: http.http.get(f"{http.base_url}/context/heavy", params={"query": q}, timeout=60),
            lambda q: http.http.post(f"{http.base_url}/memories/search", json={"query": q, "top_k": 10}, timeout=60),
        )

    def _machine_reference(self, runs: int = 200) -> float:
        """How fast this machine is today: one fixed query embedded back to back, uncached (pure CPU work, no
        database). Such an embedding took from 2.7 to 8.9 ms on this kind of machine, 4.6 to 8.9 ms within one
        afternoon (docs/benchmarks.md): latency figures from different runs compare only next to this line."""
        embedder = get_embedder()
        inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
        text = "What did I tell you about the trip to the lake with my sister last summer?"
        inner.embed_batch([text])
        timings = []
        for _ in range(runs):
            began = time.perf_counter()
            inner.embed_batch([text])
            timings.append((time.perf_counter() - began) * 1000)
        return statistics.median(timings)

    def _grow(self, tenant, heavy, light_contacts, entities, texts, pool, rng, start: int, end: int) -> None:  # type: ignore[no-untyped-def]
        now = timezone.now()
        with tqdm(total=end - start, unit="memory", desc=f"growing to {end}", file=self.stdout) as bar:
            for batch_start in range(start, end, INSERT_BATCH):
                batch = []
                around: dict[Any, str] = {}  # an episode's words and those of the turns around it
                for index in range(batch_start, min(end, batch_start + INSERT_BATCH)):
                    slot = index % 5
                    if slot == 0:
                        contact = heavy
                    elif slot == 1:
                        contact = None
                    else:
                        needed = index // 100
                        while len(light_contacts) <= needed:
                            light_contacts.append(
                                Contact.objects.create(tenant=tenant, external_id=f"c{len(light_contacts)}")
                            )
                        contact = light_contacts[needed]
                    source = index % len(texts)
                    vector = pool[source] + rng.normal(0, 0.02, pool.shape[1]).astype(np.float32)
                    vector /= np.linalg.norm(vector)
                    # a turn embedded with the one before it (stored as ingest stores it, scored per candidate)
                    context = vector + 0.5 * pool[(source - 1) % len(texts)]
                    context /= np.linalg.norm(context)
                    content = texts[source].replace(f"(note {source})", f"(note {index})")
                    kind = ("fact", "preference", "episode", "episode", "pattern")[
                        index % 5 if slot else (index // 5) % 5
                    ]
                    age = timedelta(days=float(rng.integers(0, 400)))
                    memory = Memory(
                        tenant=tenant,
                        contact=contact,
                        memory_type=kind,
                        content=content,
                        content_hash=content_hash(content),
                        embedding=vector.tolist(),
                        context_embedding=context.tolist(),
                        embedding_model="bench",
                        importance=float(rng.uniform(0.2, 0.95)),
                        base_importance=0.5,
                        decay_rate=0.005,
                        access_count=int(rng.integers(0, 30)),
                        accessed_at=now - age,
                        occurred_at=now - age,
                        valid_from=now - age,
                        source_session_id=f"s{index // 20}",
                    )
                    batch.append(memory)
                    if kind == "episode":
                        around[memory.pk] = "\n".join([texts[source - 1], content, texts[(source + 1) % len(texts)]])
                Memory.objects.bulk_create(batch)
                self._as_ingested(tenant, batch, entities, around)
                bar.update(len(batch))

    def _as_ingested(self, tenant, batch: list[Memory], entities, around: dict[Any, str]) -> None:  # type: ignore[no-untyped-def]
        """What ingest adds to a row besides its vectors: an episode's context_vector (`around`: the words of
        its turn and of the turns around it, here the neighbouring pool texts), and links to the entities its
        text names (a person or place of the corpus, one entity per scope and name, as extraction keys them)."""
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memories_memory m SET context_vector = to_tsvector('english', v.text) "
                "FROM unnest(%s::uuid[], %s::text[]) AS v(id, text) WHERE m.id = v.id",
                [list(around), list(around.values())],
            )
        links: list[tuple[Memory, tuple[Any, str, str]]] = []
        for memory in batch:
            for entity_type, names in (("person", NAMES), ("place", PLACES)):
                for name in names:
                    if name in memory.content:
                        links.append((memory, (memory.contact_id, entity_type, name)))
        missing = {key for _, key in links if key not in entities}
        created = Entity.objects.bulk_create(
            [
                Entity(
                    tenant=tenant, contact_id=contact_id, entity_type=entity_type, slug=slugify(name), display_name=name
                )
                for contact_id, entity_type, name in sorted(missing, key=str)
            ]
        )
        entities.update({(entity.contact_id, entity.entity_type, entity.display_name): entity for entity in created})
        MemoryEntity.objects.bulk_create([MemoryEntity(memory=memory, entity=entities[key]) for memory, key in links])

    def _measure(self, client: APIClient, count: int, call, scope: str) -> tuple[float, float]:  # type: ignore[no-untyped-def]
        """p50 and p95 of `count` calls, each with a chat-like query whose embedding is computed in the
        request: its entry in the embedding cache is evicted before the clock starts (the same queries are
        asked at every size and by both endpoints, so without this all but the first would be cache hits)."""
        embedder = get_embedder()
        redis = get_redis()
        asked = queries(count + 10)
        for query in asked[:10]:  # warm up connections and caches (not measured)
            call(query)
        timings = []
        for query in asked[10:]:
            if isinstance(embedder, CachedEmbedder):
                redis.delete(embedder.cache_key(query, scope))
            began = time.perf_counter()
            response = call(query)
            timings.append((time.perf_counter() - began) * 1000)
            assert response.status_code == 200, response.content
        return statistics.median(timings), float(np.percentile(timings, 95))
