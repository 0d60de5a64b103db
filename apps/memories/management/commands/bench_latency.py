"""GET /context and POST /memories/search latency at growing tenant sizes (10k, 100k, 1M memories in one
tenant), with the vector index's recall and the size of what grows.

The tenant is a synthetic one (apps/memories/benchmarks/synthetic.py, what `seed_synthetic` loads): 20% of its
memories belong to one heavy contact (the one GET /context is asked for, relationship stage "deep": a 2,000-token
budget), 20% are tenant-level brain memories (what /memories/search searches without contact_id), 60% are spread
over contacts of lognormal sizes (`--contacts`, by default one per 60 of them: 10,000 at 1M). Realistic texts;
vectors NOT computed by the embedder per row: a pool of real all-MiniLM-L6-v2 vectors of distinct texts, each
row a paraphrase of one whose vector is the pool vector plus small noise (re-normalised). Rows carry what
ingest gives real ones (episode dates and context words, context embeddings, entity links). Each growth step is
loaded with COPY; a large step drops the table-wide HNSW and GIN indexes and builds them again after, timed.

Queries are chat-like messages of 7-25 tokens (`corpus.queries`). Before each timed request the query's
entry in the embedding cache is evicted, so every measured request computes its query embedding. (Until
2026-11-23 the queries were salted with their index instead, and the same texts were asked at every size
and by both endpoints: only the first size's GET /context computed its embeddings, every later figure read
them from the cache; those rows had no context_vector and no entity links either. docs/benchmarks.md.)

After each growth step the command does what the running system does on its own before measuring:
VACUUM ANALYZE (autovacuum's job after a bulk load), a CHECKPOINT, and the lexicon refresh of the measured
scopes (the `lexicon_refresh_task` a worker runs when a search finds a large scope without a fresh lexicon),
and a tenant grown past ENGRAM_VECTOR_TENANT_INDEX_FROM beside other tenants, or a contact past
ENGRAM_VECTOR_CONTACT_INDEX_FROM (the heavy one), gets its own vector index (the hourly `vector_indexes_sync_task`,
apps/memories/store/vector_indexes.py).
With --via-http and the stack started here, the measurement also waits until the stack's worker is idle: its
beat queues the periodic consolidation of every tenant when it starts after a missed 6-hour tick (always, for
a stack started now and then), and at 1M memories that is ~450 scope tasks, minutes of a core writing rows
while requests are timed. The figures are those a client gets after the background jobs have run.
The index build and the timed requests run under `--lock` (flock) when given, so that they do not overlap
another benchmark's timing; the recall measurement (apps/memories/benchmarks/recall.py) runs outside it.
"""

from __future__ import annotations

import fcntl
import itertools
import statistics
import time
from argparse import ArgumentParser
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np
from django.core.management.base import CommandError
from django.db import DatabaseError, connection
from django.utils import timezone
from rest_framework.test import APIClient

from apps.contacts.models import Contact
from apps.core.commands import DatabaseCommand
from apps.core.embeddings import CachedEmbedder, cache_scope, get_embedder
from apps.core.redis import get_redis
from apps.core.timing import parse_server_timing
from apps.memories.benchmarks import as_in_production, floor, hnsw_bloat_note, synthetic
from apps.memories.benchmarks.corpus import queries
from apps.memories.benchmarks.recall import ANY_CONTACT, contact_sample, ef_search, scope_recall
from apps.memories.benchmarks.stack import EngramClient, running_stack, wait_drained
from apps.memories.models import Memory
from apps.memories.retrieval.lexicon import scope_lexicon_refresh
from apps.memories.store.vector_indexes import vector_indexes_sync
from apps.tenants.models import Tenant
from apps.tenants.services import api_key_create, tenant_create
from config.embedded import VAR_DIR

POOL = 4000
MEMORIES_PER_CONTACT = 60  # of the light contacts' 60%: 10,000 contacts at 1M memories
TYPICAL_CONTACTS = 20  # the contacts GET /context (typical contact) rotates through
BEAT_FIRST_TICK_SECONDS = 20.0  # a started stack's beat has sent what is due by then (it ticks within seconds)


def _mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:,.0f} MB"


@contextmanager
def _held(path: str, log: Callable[[str], None]) -> Iterator[None]:
    """flock(path) for the block (no lock when path is empty)."""
    if not path:
        yield
        return
    with open(path, "a") as handle:
        log(f"waiting for {path}…")
        fcntl.flock(handle, fcntl.LOCK_EX)
        log(f"holding {path}")
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Command(DatabaseCommand):
    help = (
        "Benchmark: GET /context and POST /memories/search p50/p95 at growing tenant sizes (synthetic rows loaded "
        "with COPY; vectors derived from a pool embedded once, not per row), index build time, table and index "
        "sizes, PostgreSQL's memory, and the HNSW index's recall@10 against exact search (brain, heavy contact, "
        "typical contacts)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--sizes", default="1000,10000,100000")
        parser.add_argument("--requests", type=int, default=500, help="requests per figure (p95 of 500: 25 above it)")
        parser.add_argument("--keep", action="store_true")
        parser.add_argument("--pool", type=int, default=POOL, help="distinct synthetic memories to embed and vary")
        parser.add_argument(
            "--contacts",
            type=int,
            default=0,
            help=f"contacts at the largest size (default: one per {MEMORIES_PER_CONTACT} of its light memories)",
        )
        parser.add_argument("--recall-queries", type=int, default=50, help="queries per scope for recall (0: none)")
        parser.add_argument("--lock", default="", help="flock this file around index builds and timed requests")
        parser.add_argument(
            "--reuse",
            default="",
            help="measure this kept tenant (slug, from an earlier --keep) as it is instead of growing a new one",
        )
        parser.add_argument(
            "--recall-ef",
            default="",
            help="recall at these hnsw.ef_search values too (e.g. 100,200,400), and over the whole tenant unfiltered",
        )
        parser.add_argument(
            "--via-http",
            action="store_true",
            help="ask through HTTP against the stack `make run` starts (started here unless --url), not in-process",
        )
        parser.add_argument("--url", default="", help="with --via-http: the running stack to ask")
        parser.add_argument(
            "--floor",
            action="store_true",
            help="also time, for the heavy contact, what every GET /context pays whatever the ranking does: an "
            "authenticated GET /contacts/{id}, the query's embedding, the vector index alone (benchmarks/floor.py)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        sizes = sorted(int(size) for size in options["sizes"].split(","))
        if note := hnsw_bloat_note():
            self.stdout.write(note)
        reference = self._machine_reference()
        self.stdout.write(f"machine reference (one query embedded back to back, uncached): p50 {reference:.2f} ms")
        run = timezone.now().strftime("%Y%m%d%H%M%S")
        reused = Tenant.objects.get(slug=options["reuse"]) if options["reuse"] else None
        tenant = reused or tenant_create(name=f"bench latency {run}", slug=f"bench-latency-{run}")
        if reused is not None:  # its size as it is; nothing loaded, nothing deleted
            sizes = [Memory.objects.filter(tenant=reused).count()]
            options["keep"] = True
        key = api_key_create(tenant=tenant, name="bench").plaintext
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        get_context, search_brain, get_contact = self._calls(client, key, options)
        contacts = options["contacts"] or 1 + max(1, synthetic.Plan.light_before(sizes[-1]) // MEMORIES_PER_CONTACT)
        entries = synthetic.pool_entries(options["pool"])
        seeder = synthetic.Seeder(
            tenant=tenant,
            plan=synthetic.Plan(memories=sizes[-1], contacts=contacts),
            entries=entries,
            vectors=synthetic.pool_vectors(entries, log=self.stdout.write),
            log=self.stdout.write,
        )
        self.stdout.write(f"vector search settings: {ef_search()}")
        rows_done = 0
        lines, growth, recalls, floors = [], [], [], []
        try:
            for size in sizes:
                if reused is None:
                    self.stdout.write(f"growing to {size:,} memories…")
                    load = seeder.load(rows_done, size, rebuild_indexes=True, build_indexes=False)
                else:
                    self.stdout.write(f"measuring '{reused.slug}' as it is ({size:,} memories)…")
                    load = synthetic.LoadReport()
                    with connection.cursor() as cursor:  # time has passed since it was built: stages fade
                        staged = synthetic.stage_contacts(cursor, tenant_id=tenant.pk)
                    self.stdout.write(f"  {staged:,} contacts given their stage again (the heavy one deep)")
                rows_done = size
                heavy = Contact.objects.get(tenant=tenant, external_id=synthetic.HEAVY)
                typical = contact_sample(tenant_id=tenant.pk, count=TYPICAL_CONTACTS, minimum=5)
                typical_external = list(
                    Contact.objects.filter(pk__in=typical).order_by("external_id").values_list("external_id", "pk")
                )
                with _held(options["lock"], self.stdout.write):
                    built = synthetic.build_missing_indexes(log=self.stdout.write)
                    self._own_indexes()
                    self._worker_idle()
                    self._settle(tenant, [heavy.pk, None, *typical])
                    with as_in_production():  # the check too: in process, the test client's host is "testserver"
                        self._check_context(get_context)
                        context = self._measure(
                            options["requests"],
                            get_context,
                            [("heavy", cache_scope(tenant_id=tenant.pk, contact_id=heavy.pk))],
                        )
                        search = self._measure(
                            options["requests"],
                            search_brain,
                            [(None, cache_scope(tenant_id=tenant.pk, contact_id=None))],
                        )
                        light = self._measure(
                            options["requests"],
                            get_context,
                            [
                                (external, cache_scope(tenant_id=tenant.pk, contact_id=pk))
                                for external, pk in typical_external
                            ]
                            or [("heavy", cache_scope(tenant_id=tenant.pk, contact_id=heavy.pk))],
                        )
                        if options["floor"]:
                            floors.append(self._floor(options["requests"], get_contact, tenant, heavy))
                sizes_now = synthetic.table_sizes()
                memory = synthetic.postgres_memory_bytes()
                line = (
                    f"{size:>7} memories | GET /context (heavy contact, {size // 5} memories): p50 {context[0]:.1f} ms "
                    f"p95 {context[1]:.1f} ms | POST /memories/search (brain, {size // 5}): p50 {search[0]:.1f} ms "
                    f"p95 {search[1]:.1f} ms | GET /context (typical contacts, {len(typical_external)}): "
                    f"p50 {light[0]:.1f} ms p95 {light[1]:.1f} ms"
                )
                lines.append(line)
                self.stdout.write(line)
                build_seconds = sum(built.values())
                hnsw_seconds = built.get("memory_embedding_hnsw", 0.0)
                growth.append(
                    f"{size:>9,} | load {load.seconds_load:.0f} s ({load.memories / max(load.seconds_load, 1e-9):,.0f}"
                    f"/s) | index build {build_seconds:.1f} s (HNSW {hnsw_seconds:.1f} s) | memories table "
                    f"{_mb(sizes_now['memories_table'])}, its indexes {_mb(sizes_now['memories_indexes'])} "
                    f"(HNSW {_mb(sizes_now['hnsw'])}), entity links {_mb(sizes_now['memory_entity_links'])}, "
                    f"entities {_mb(sizes_now['entities'])}, revisions {_mb(sizes_now['revisions'])} | "
                    f"PostgreSQL PSS {_mb(memory)} | contacts {Contact.objects.filter(tenant=tenant).count():,}"
                )
                self.stdout.write(growth[-1])
                if options["recall_queries"] > 0:
                    recalls.extend(self._recall(tenant, heavy, typical, options["recall_queries"], size))
                    exact: dict[Any, Any] = {}
                    for value in [int(value) for value in options["recall_ef"].split(",") if value]:
                        recalls.extend(self._recall_at(tenant, heavy, options["recall_queries"], size, value, exact))
        finally:
            self._stack.close()
            if not options["keep"]:
                synthetic.tenant_purge(tenant=tenant)
                self._own_indexes()  # its own vector index, if it had one, goes with it
        footer = (
            f"machine reference (one query embedded back to back, uncached): p50 {reference:.2f} ms before, "
            f"{self._machine_reference():.2f} ms after"
        )
        self.stdout.write(
            "\n".join(["", "summary:", *lines, *floors, "", "growth:", *growth, "", "recall:", *recalls, footer])
        )

    def _own_indexes(self) -> None:
        """What the hourly `vector_indexes_sync_task` does, done now: a tenant grown past the threshold beside
        other tenants, and a contact past its own (the heavy one), get their own vector index
        (store/vector_indexes.py), as they would within a few hours."""
        report = vector_indexes_sync(progress=lambda line: self.stdout.write(f"  {line}"))
        if report.built or report.dropped:
            self.stdout.write(
                f"  tenants' and contacts' own vector indexes: {len(report.built)} built, {len(report.dropped)} dropped"
            )

    def _worker_idle(self) -> None:
        """With the stack started here: wait until its beat has had its first tick and the worker has run what
        that queued (the periodic consolidation fan-out, when a 6-hour tick was missed), so the timed requests
        share the cores with nothing but the stack's 30-second jobs."""
        if self._stack_started is None:
            return
        time.sleep(max(0.0, self._stack_started + BEAT_FIRST_TICK_SECONDS - time.monotonic()))
        shown = [0.0]

        def progress(depth: int, busy: int) -> None:
            if time.monotonic() - shown[0] >= 15:
                shown[0] = time.monotonic()
                self.stdout.write(f"  waiting for the stack's worker: {depth} queued, {busy} running")

        waited = wait_drained(on_poll=progress)
        self.stdout.write(f"  worker idle after {waited:.0f} s")

    def _settle(self, tenant: Any, contact_ids: list[Any]) -> None:
        """The steady state a search meets in production: the new rows vacuumed and analysed (no autovacuum of
        the bulk load starts in the middle of the measurement: an HNSW index vacuum takes a core for seconds on
        two), the load's dirty pages written out (not flushed by the checkpointer while measuring), and the
        measured scopes' lexicons built."""
        self.stdout.write("vacuuming, analysing and checkpointing…")
        with connection.cursor() as cursor:
            cursor.execute(
                "VACUUM (ANALYZE) memories_memory, memories_memoryentity, entities_entity, contacts_contact, "
                "contacts_contactstate, memories_memoryrevision"
            )
            try:
                cursor.execute("CHECKPOINT")  # superuser or pg_checkpoint (the embedded server: yes)
            except DatabaseError as exc:
                self.stdout.write(f"  (no CHECKPOINT: {exc}; figures may include background writes)")
        for contact_id in contact_ids:
            scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact_id)

    def _recall_at(self, tenant: Any, heavy: Any, count: int, size: int, ef: int, exact: dict[Any, Any]) -> list[str]:
        """Recall of the brain, the heavy contact and the whole tenant (no contact filter: the graph's own
        recall) at another ef_search, with relaxed and strict iterative scans."""
        vectors = get_embedder().embed_batch(queries(count, seed=29))
        lines = []
        for mode in ("relaxed_order", "strict_order"):
            with connection.cursor() as cursor:
                cursor.execute(f"SET hnsw.ef_search = {ef}; SET hnsw.iterative_scan = {mode}")
            try:
                scopes: list[tuple[list[Any], str]] = [
                    ([None], "brain"),
                    ([heavy.pk], "heavy"),
                    ([ANY_CONTACT], "whole tenant"),
                ]
                for contact_ids, name in scopes:
                    result = scope_recall(
                        tenant_id=tenant.pk,
                        contact_ids=contact_ids,
                        vectors=vectors,
                        label=f"{size:>9,} {name} at ef_search {ef}, {mode}",
                        exact_cache=exact,
                        as_search=False,
                    )
                    lines.append(result.line())
                    self.stdout.write(lines[-1])
            finally:
                with connection.cursor() as cursor:
                    cursor.execute("RESET hnsw.ef_search; RESET hnsw.iterative_scan")
        return lines

    def _recall(self, tenant: Any, heavy: Any, typical: list[Any], count: int, size: int) -> list[str]:
        vectors = get_embedder().embed_batch(queries(count, seed=29))
        results = [
            scope_recall(tenant_id=tenant.pk, contact_ids=[None], vectors=vectors, label=f"{size:>9,} brain"),
            scope_recall(tenant_id=tenant.pk, contact_ids=[heavy.pk], vectors=vectors, label=f"{size:>9,} heavy"),
        ]
        if typical:
            results.append(
                scope_recall(
                    tenant_id=tenant.pk, contact_ids=typical, vectors=vectors, label=f"{size:>9,} typical contacts"
                )
            )
        lines = [result.line() for result in results]
        for line in lines:
            self.stdout.write(line)
        return lines

    def _calls(self, client: APIClient, key: str, options: dict[str, Any]) -> tuple[Any, Any, Any]:
        """GET /context of a contact, a brain search and GET /contacts/{id} (the floor's web tier): in process
        (DRF's test client), or with --via-http as a client gets them (a real socket, gunicorn, the stack's own
        processes). Each call takes (query, contact)."""
        self._stack = ExitStack()
        self._stack_started: float | None = None
        if not options["via_http"]:
            return (
                lambda q, contact: client.get(f"/api/v1/context/{contact}", {"query": q}),
                lambda q, _: client.post("/api/v1/memories/search", {"query": q, "top_k": 10}, format="json"),
                lambda _, contact: client.get(f"/api/v1/contacts/{contact}"),
            )
        base_url = options["url"] or self._stack.enter_context(
            running_stack(log_path=VAR_DIR / "bench" / "latency.log", extra_env={"ENGRAM_SERVER_TIMING": "1"})
        )
        if not options["url"]:
            self._stack_started = time.monotonic()
        self.stdout.write(f"asking {base_url} over HTTP")
        http = EngramClient(base_url, key)
        self._stack.callback(http.close)
        return (
            lambda q, contact: http.http.get(f"{http.base_url}/context/{contact}", params={"query": q}, timeout=60),
            lambda q, _: http.http.post(f"{http.base_url}/memories/search", json={"query": q, "top_k": 10}, timeout=60),
            lambda _, contact: http.http.get(f"{http.base_url}/contacts/{contact}", timeout=60),
        )

    def _check_context(self, get_context: Any) -> None:
        """The heavy contact's context holds memories: a contact whose stage gives no budget answers GET /context
        in a few ms without retrieving anything, and a figure of that is no figure of retrieval."""
        response = get_context(queries(1)[0], synthetic.HEAVY)
        body = response.json() if response.status_code == 200 else {}
        if not body.get("memories"):
            raise CommandError(
                f"GET /context of the heavy contact returned no memories ({response.status_code}, stage "
                f"{body.get('state', {}).get('relationship_stage')!r}, budget {body.get('memory_budget')}): "
                "nothing to time"
            )

    def _floor(self, count: int, get_contact: Any, tenant: Tenant, heavy: Contact) -> str:
        """What every GET /context of the heavy contact pays whatever the ranking does (benchmarks/floor.py):
        the web tier with its authentication and the contact's row, the query's embedding, the vector index; and
        beside them the embedding as a request pays it, the caches cold."""
        scope = cache_scope(tenant_id=tenant.pk, contact_id=heavy.pk)
        web = floor.Part(
            "GET /contacts/{id} (web tier, key, contact row)", self._timings(count, get_contact, [("heavy", scope)])
        )
        texts = queries(count + 10)[10:]
        embedding = floor.embedding_part(texts)
        cold = floor.embedding_part(texts, cold=True)  # what a request pays (floor.py)
        scope_size = Memory.objects.filter(tenant=tenant, contact=heavy).count()
        vectors = get_embedder().embed_batch(texts)
        vector = floor.vector_part(tenant=tenant, contact=heavy, vectors=vectors, scope_size=scope_size)
        line = floor.summary([web, embedding, vector], beside=[cold])
        self.stdout.write(line)
        return line

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

    def _measure(self, count: int, call: Any, targets: list[tuple[str | None, str]]) -> tuple[float, float]:
        """p50 and p95 of `_timings`."""
        timings = self._timings(count, call, targets)
        return statistics.median(timings), float(np.percentile(timings, 95))

    def _timings(self, count: int, call: Any, targets: list[tuple[str | None, str]]) -> tuple[float, ...]:
        """The milliseconds of `count` calls, each with a chat-like query whose embedding is computed in the
        request: its entry in the embedding cache is evicted before the clock starts (the same queries are
        asked at every size and by every endpoint, so without this all but the first would be cache hits).
        `targets`: (contact asked, its cache scope), taken in turn."""
        embedder = get_embedder()
        redis = get_redis()
        asked = queries(count + 10)
        turns = itertools.cycle(targets)
        for query in asked[:10]:  # warm up connections and caches (not measured)
            call(query, targets[0][0])
        timings = []
        phases: dict[str, float] = {}
        for query in asked[10:]:
            contact, scope = next(turns)
            if isinstance(embedder, CachedEmbedder):
                redis.delete(embedder.cache_key(query, scope))
            began = time.perf_counter()
            response = call(query, contact)
            timings.append((time.perf_counter() - began) * 1000)
            assert response.status_code == 200, response.content
            for name, milliseconds in parse_server_timing(response.headers.get("Server-Timing", "")).items():
                phases[name] = phases.get(name, 0.0) + milliseconds
        if phases:  # the stack --via-http starts answers with Server-Timing: where the server's time went, on average
            self.stdout.write(
                "    server, mean ms per request: "
                + ", ".join(f"{name} {total / len(timings):.2f}" for name, total in sorted(phases.items()))
            )
        return tuple(timings)
