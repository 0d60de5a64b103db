"""Synthetic tenants at scale (issue 29 item 4): up to millions of memories with realistic texts and vectors,
loaded with PostgreSQL COPY, searchable by the normal API (vector, full-text and entity paths).

Texts: facts, preferences, episodes and patterns from ~40 templates filled with names, places, activities,
foods, jobs and dates (`pool_entries`), so a scope holds many different sentences, not one repeated.

Vectors are NOT computed by the embedder per row. A pool of distinct texts (`--pool`, 4,000 by default) is
embedded once with the configured embedder (cached under var/bench/), and every row is a close paraphrase of
one pool text (the same template and names, its own date or qualifier) whose vector is the pool text's plus
Gaussian noise (σ 0.02 per dimension, re-normalised: cosine ≈ 0.93 to its pool text). The vector index thus
sees clusters of near-duplicates around a few thousand real sentence embeddings, as a tenant whose users talk
about the same things does; a query embedded by the real embedder lands near the rows that say what it asks.

The shape of the tenant (`Plan`): memories in cycles of five — one of the heavy contact (`heavy`, relationship
stage deep: 20% of the tenant), one of the tenant's brain (contact None: 20%), three of the other contacts
(60%), whose sizes are lognormal (σ 1: a few contacts with hundreds of memories, most with tens), in blocks
so that a growing prefix of the plan adds contacts as it grows. What ingest gives a real row is given here:
an episode's date in `index_terms` and its neighbouring turns' words in `context_vector`, a context embedding,
the generated full-text columns (PostgreSQL computes them on insert), links to the people, pets and places the
text names (one entity per scope and name, as extraction keys them), a `created` revision, a contact state.

Loading: the rows of a chunk are written with binary COPY (psycopg 3 `cursor.copy`) into a temporary staging
table, then moved by one INSERT … SELECT that computes the tsvectors; each chunk commits on its own. The
connection is bound to the tenant (`app.tenant_id`) for the writes, so row-level security checks every row.
Before a large load the table-wide HNSW and GIN indexes of memories are dropped and built again after it, from
the model's own definitions, with `maintenance_work_mem` of 1.5 GB (SET LOCAL); then ANALYZE.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.utils import timezone
from django.utils.text import slugify
from psycopg.adapt import Dumper
from psycopg.pq import Format

from apps.core.embeddings import content_hash, get_embedder, memory_text
from apps.core.tenancy import tenant_bind, tenant_reset
from apps.memories.benchmarks import corpus
from apps.memories.models import Memory
from apps.tenants.models import Tenant
from config.embedded import VAR_DIR

ACTOR = "seed_synthetic"
EMBEDDING_MODEL = "synthetic"  # the rows' embedding_model: what made their vectors (not the embedder itself)
NOISE = 0.02
CHUNK = 20_000
REBUILT_INDEXES = ("memory_embedding_hnsw", "memory_scoped_search_gin", "memory_context_gin")
REBUILD_FROM = 50_000  # a load at least this large (and as large as the table) drops and rebuilds them
MAINTENANCE_WORK_MEM = "1536MB"
SESSION_TURNS = 20
HEAVY = "heavy"

NAMES = [
    *corpus.NAMES,
    *[
        "Aarav",
        "Aditi",
        "Alejandro",
        "Amelia",
        "Ana",
        "Anika",
        "Ben",
        "Carlos",
        "Chen",
        "Chloe",
        "Daniel",
        "Dev",
        "Elena",
        "Emma",
        "Fatima",
        "Felix",
        "Hana",
        "Hugo",
        "Ibrahim",
        "Ines",
        "Isla",
        "Ivan",
        "Jade",
        "James",
        "Julia",
        "Kabir",
        "Kavya",
        "Lars",
        "Lucas",
        "Lucia",
        "Mateo",
        "Mei",
        "Mia",
        "Nadia",
        "Nina",
        "Noah",
        "Omar",
        "Oscar",
        "Pablo",
        "Rahul",
        "Rosa",
        "Sam",
        "Sara",
        "Tara",
        "Theo",
        "Uma",
        "Vikram",
        "Wei",
        "Yusuf",
        "Zara",
        "Zoe",
    ],
]
PETS = ["Pebble", "Biscuit", "Luna", "Coco", "Simba", "Nala", "Pepper", "Milo", "Ginger", "Oreo", "Rocky", "Toffee"]
PLACES = [
    *corpus.PLACES,
    *[
        "Goa",
        "Jaipur",
        "Delhi",
        "Bangalore",
        "Kyoto",
        "Seoul",
        "Paris",
        "Madrid",
        "Rome",
        "Porto",
        "Prague",
        "Vienna",
        "Dublin",
        "Oslo",
        "Cairo",
        "Lagos",
        "Sydney",
        "Auckland",
        "Denver",
        "Seattle",
        "Boston",
        "Chicago",
        "Montreal",
        "Havana",
        "Bogota",
        "Santiago",
        "Istanbul",
        "Dubai",
        "Singapore",
        "Bangkok",
        "Hanoi",
        "Manila",
    ],
]
ACTIVITIES = [
    *(thing for thing in corpus.THINGS if not thing.startswith("my ")),
    *[
        "yoga",
        "swimming",
        "climbing",
        "cycling",
        "photography",
        "baking",
        "painting",
        "surfing",
        "tennis",
        "badminton",
        "knitting",
        "chess",
        "salsa",
        "karate",
        "skiing",
        "birdwatching",
    ],
]
FOODS = [
    "sushi",
    "ramen",
    "tacos",
    "dosa",
    "paella",
    "pho",
    "croissants",
    "dumplings",
    "falafel",
    "curry",
    "pasta",
    "pizza",
    "kimchi",
    "ceviche",
]
JOBS = [
    "nurse",
    "teacher",
    "software engineer",
    "designer",
    "accountant",
    "chef",
    "pharmacist",
    "lawyer",
    "architect",
    "data analyst",
    "product manager",
    "electrician",
]
RELATIONS = ["sister", "brother", "mother", "father", "cousin", "best friend", "colleague", "neighbour", "partner"]
TOPICS = [
    "work",
    "money",
    "politics",
    "the move",
    "the wedding",
    "exams",
    "the new job",
    "health",
    "the divorce",
    "the renovation",
    "the visa",
    "the promotion",
]
TIMES = ["morning", "evening", "weekend", "night", "afternoon", "lunch break"]
ADJECTIVES = ["golden", "tiny", "lazy", "noisy", "old", "young", "clever", "shy", "fluffy", "grumpy"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

# (memory type, template, qualifiers a paraphrase adds). {name}/{name2} are people, {pet} a pet, {place}/{place2}
# places: the entities a row links to. A pool text is the template filled; a row adds one qualifier (or, for an
# episode, its date in index_terms).
TEMPLATES: list[tuple[str, str, tuple[str, ...]]] = [
    ("fact", "Has a {adjective} dog named {pet}", ("", " who is {age} years old", " adopted from a shelter")),
    ("fact", "Has a cat called {pet} that sleeps all day", ("", " and a lot of plants", " since {year}")),
    ("fact", "Works as a {job} in {place}", ("", " since {year}", " at a small company", " on the night shift")),
    ("fact", "Lives in {place} with their {relation} {name}", ("", " since {year}", " in a small flat")),
    ("fact", "Their {relation} {name} lives in {place}", ("", " and visits every {time}", " since {year}")),
    ("fact", "Was born in {place} and moved to {place2} as a child", ("", " in {year}", " with the whole family")),
    ("fact", "Is allergic to {food}", ("", " and carries medicine", " since childhood")),
    ("fact", "Studies {activity} with {name} twice a week", ("", " in {place}", " online")),
    ("fact", "Their {relation} {name} is a {job}", ("", " in {place}", " who works long hours")),
    ("fact", "Has two kids, {name} and {name2}", ("", " who go to school in {place}", " aged {age} and {age2}")),
    ("fact", "Manages a team of {age} people at work", ("", " in {place}", " since {year}")),
    ("fact", "Is training for a marathon in {place}", ("", " in {month}", " with {name}")),
    ("preference", "Prefers {activity} in the {time}", ("", " when the weather is good", " with {name}")),
    ("preference", "Loves {food} from the market in {place}", ("", " especially on Fridays", " with extra spice")),
    ("preference", "Doesn't like talking about {topic}", ("", " with {name}", " before the {time}")),
    ("preference", "Prefers short answers about {topic}", ("", " during the week", " without emojis")),
    ("preference", "Would rather do {activity} than {activity2} on weekends", ("", " with {name}", " in {place}")),
    ("preference", "Wants to be called {name} rather than their full name", ("", " by everyone", " at work")),
    ("preference", "Likes to plan trips to {place} months ahead", ("", " with {name}", " on a budget")),
    ("preference", "Avoids {food} because of the taste", ("", " since the trip to {place}", " at restaurants")),
    ("preference", "Enjoys cooking {food} for {name}", ("", " on Sundays", " when friends come over")),
    ("episode", "Went to {place} with {name} for {activity}", ("", " and it rained every day", " for a week")),
    ("episode", "Told {name} about {topic} over dinner", ("", " in {place}", " and felt better afterwards")),
    ("episode", "Was stressed about {topic} before the deadline", ("", " and slept badly", " and talked to {name}")),
    ("episode", "Celebrated {name}'s birthday in {place}", ("", " with {food}", " with the whole family")),
    ("episode", "Had {food} with {name} in {place} after {activity}", ("", " and laughed a lot", " late at night")),
    ("episode", "Moved from {place} to {place2} for work", ("", " with {name}", " in {month}")),
    ("episode", "Missed the flight to {place} and stayed with {name}", ("", " for two nights", " near the airport")),
    ("episode", "{pet} the dog ate their shoes again", ("", " in the {time}", " while {name} laughed")),
    ("episode", "Took {pet} to the vet in {place}", ("", " for a check-up", " after a long walk")),
    ("episode", "Finished {activity} classes with {name}", ("", " and got a certificate", " in {place}")),
    ("episode", "Argued with their {relation} {name} about {topic}", ("", " on the phone", " and made up later")),
    ("episode", "Started a new job as a {job} in {place}", ("", " and was nervous", " with {name} on the team")),
    ("episode", "Hosted {name} and {name2} for {food} at home", ("", " in the {time}", " and cooked for hours")),
    ("episode", "Ran a half marathon in {place}", ("", " in the rain", " with {name} cheering")),
    ("pattern", "Usually chats about {topic} in the {time}", ("", " on weekdays", " after work")),
    ("pattern", "Often mentions {name} when talking about {activity}", ("", " lately", " in the {time}")),
    ("pattern", "Tends to feel low when {topic} comes up", ("", " at the end of the month", " in winter")),
    ("pattern", "Books a trip to {place} every {month}", ("", " with {name}", " for {activity}")),
]


@dataclass(frozen=True)
class PoolEntry:
    """One distinct sentence of the pool (embedded once), the template it came from and what it names."""

    memory_type: str
    text: str
    qualifiers: tuple[str, ...]
    slots: dict[str, str]
    entities: tuple[tuple[str, str], ...]  # (entity type, display name)


def _slots(rng: random.Random) -> dict[str, str]:
    names = rng.sample(NAMES, 2)
    places = rng.sample(PLACES, 2)
    activities = rng.sample(ACTIVITIES, 2)
    return {
        "name": names[0],
        "name2": names[1],
        "pet": rng.choice(PETS),
        "place": places[0],
        "place2": places[1],
        "activity": activities[0],
        "activity2": activities[1],
        "food": rng.choice(FOODS),
        "job": rng.choice(JOBS),
        "relation": rng.choice(RELATIONS),
        "topic": rng.choice(TOPICS),
        "time": rng.choice(TIMES),
        "adjective": rng.choice(ADJECTIVES),
        "month": rng.choice(MONTHS),
        "year": str(rng.randint(2005, 2025)),
        "age": str(rng.randint(2, 14)),
        "age2": str(rng.randint(2, 14)),
    }


def _named(template: str, slots: dict[str, str]) -> tuple[tuple[str, str], ...]:
    named = []
    for key, entity_type in (("name", "person"), ("name2", "person"), ("pet", "pet"), ("place", "place")):
        if "{" + key + "}" in template:
            named.append((entity_type, slots[key]))
    if "{place2}" in template:
        named.append(("place", slots["place2"]))
    return tuple(dict.fromkeys(named))


def pool_entries(size: int, *, seed: int = 29) -> list[PoolEntry]:
    """`size` distinct sentences (templates filled with distinct slot values; duplicates drawn again)."""
    rng = random.Random(seed)
    entries: list[PoolEntry] = []
    seen: set[str] = set()
    for _ in range(50 * size + 1000):  # some templates have few fillings (14 foods): drawn again when taken
        if len(entries) == size:
            break
        memory_type, template, qualifiers = rng.choice(TEMPLATES)
        slots = _slots(rng)
        text = template.format(**slots)
        if text in seen:
            continue
        seen.add(text)
        entries.append(PoolEntry(memory_type, text, qualifiers, slots, _named(template, slots)))
    if len(entries) < size:
        raise ValueError(f"the templates give fewer than {size} distinct texts")
    return entries


def pool_vectors(entries: list[PoolEntry], *, log: Callable[[str], None] = lambda _: None) -> np.ndarray:
    """The pool's embeddings by the configured embedder, computed once and kept under var/bench/ (keyed by
    the embedder and the texts)."""
    embedder = get_embedder()
    texts = [entry.text for entry in entries]
    digest = hashlib.sha256("\n".join([embedder.name, *texts]).encode()).hexdigest()[:16]
    path = VAR_DIR / "bench" / f"synthetic-pool-{digest}.npy"
    if path.exists():
        return np.load(path)
    log(f"embedding a pool of {len(texts)} distinct texts with {embedder.name} (once; kept in {path})…")
    began = time.perf_counter()
    vectors = np.vstack([embedder.embed_batch(texts[start : start + 256]) for start in range(0, len(texts), 256)])
    log(f"  {len(texts) / (time.perf_counter() - began):.0f} texts/s")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors.astype(np.float32))
    return vectors.astype(np.float32)


@dataclass(frozen=True)
class Plan:
    """Who owns memory number i of a synthetic tenant (a pure function of i: a growing prefix of the plan is
    the same tenant, smaller). `contacts` counts the heavy contact too."""

    memories: int
    contacts: int
    seed: int = 29
    bounds: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        light = self.light_before(self.memories)
        others = max(0, self.contacts - 1)
        if others == 0:
            bounds = np.zeros(0, dtype=np.int64)
        else:
            sizes = np.random.default_rng(self.seed).lognormal(0.0, 1.0, others)
            wanted = sizes / sizes.sum() * max(light, others)
            counts = np.maximum(1, np.floor(wanted)).astype(np.int64)
            # largest remainders until the sizes add up (a contact holds at least one memory)
            short = max(light, others) - int(counts.sum())
            if short > 0:
                counts[np.argsort(counts - wanted)[:short]] += 1
            bounds = np.cumsum(counts)
        object.__setattr__(self, "bounds", bounds)

    @staticmethod
    def light_before(i: int) -> int:
        """Memories of the light contacts among the first i (slots 2-4 of each cycle of five)."""
        return (i // 5) * 3 + max(0, i % 5 - 2)

    def owner(self, i: int) -> tuple[str, int]:
        """('heavy', position in the heavy contact), ('brain', position) or ('light', light contact number)."""
        slot = i % 5
        if slot == 1:
            return "brain", i // 5
        if slot == 0 or len(self.bounds) == 0:
            return HEAVY, i // 5 if slot == 0 else i
        light = self.light_before(i)
        return "light", min(int(np.searchsorted(self.bounds, light, side="right")), len(self.bounds) - 1)

    def light_start(self, contact: int) -> int:
        return 0 if contact == 0 else int(self.bounds[contact - 1])


@dataclass
class LoadReport:
    memories: int = 0
    contacts: int = 0
    entities: int = 0
    links: int = 0
    seconds_load: float = 0.0
    seconds_index: dict[str, float] = field(default_factory=dict)
    seconds_analyze: float = 0.0


class _Halfvec(bytes):
    """A halfvec in PostgreSQL's binary form (int16 dimensions, int16 unused, big-endian float16 values)."""


def _halfvec_rows(vectors: np.ndarray) -> list[_Halfvec]:
    header = np.array([vectors.shape[1], 0], dtype=">u2").tobytes()
    body = vectors.astype(">f2")
    return [_Halfvec(header + row.tobytes()) for row in body]


@contextmanager
def _copy_cursor() -> Iterator[Any]:
    """A psycopg cursor on Django's connection that dumps `_Halfvec` for COPY … (FORMAT BINARY). Its own
    adapters map: Django's cursors are untouched."""
    connection.ensure_connection()
    raw = connection.connection
    assert raw is not None
    with raw.cursor() as cursor:
        cursor.execute("SELECT 'halfvec'::regtype::oid")
        row = cursor.fetchone()
        assert row is not None
        halfvec_oid = int(row[0])

        class HalfvecDumper(Dumper):
            format = Format.BINARY
            oid = halfvec_oid

            def dump(self, obj: Any) -> bytes:
                return bytes(obj)

        cursor.adapters.register_dumper(_Halfvec, HalfvecDumper)
        cursor.halfvec_oid = halfvec_oid
        yield cursor


UUID, TEXT, FLOAT8, INT4, INT8 = 2950, 25, 701, 23, 20


def _staged(cursor: Any, table: str, rows: list[Any], insert: str, params: list[Any] | None = None) -> None:
    """COPY `rows` into a temporary table (`name (columns)`), then `insert` from it. PostgreSQL refuses COPY
    FROM into a table under row-level security: the INSERT … SELECT is where the policies check every row."""
    name = table.split(" ", 1)[0]
    cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table}")
    cursor.execute(f"TRUNCATE {name}")
    with cursor.copy(f"COPY {name} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    cursor.execute(insert, params or [])


_STAGE_COLUMNS = [
    ("id", "uuid", UUID),
    ("contact_id", "uuid", UUID),
    ("memory_type", "text", TEXT),
    ("content", "text", TEXT),
    ("content_hash", "text", TEXT),
    ("embedding", "halfvec", 0),
    ("context_embedding", "halfvec", 0),
    ("context_words", "text", TEXT),
    ("index_terms", "text", TEXT),
    ("importance", "float8", FLOAT8),
    ("decay_rate", "float8", FLOAT8),
    ("access_count", "int4", INT4),
    ("age_seconds", "float8", FLOAT8),
    ("access_age_seconds", "float8", FLOAT8),
    ("source_session_id", "text", TEXT),
    ("source_sequence", "int8", INT8),
]
_STAGE = "synthetic_memory_stage"


# a synthetic contact's stage (GET /context's budget: contacts.intelligence.stages) and the activity that earns it,
# so that the periodic refresh (contacts.services.state.contact_state_refresh) keeps it: the heavy contact is
# deep, the others spread over the stages by a hash of their id. Until session 38 every contact was written
# with one session whatever its stage: the first refresh a stack's beat ran made them all "new" (budget 0), and
# GET /context of the heavy contact measured an empty context (7 ms instead of ~50) without failing
STAGE_ACTIVITY = {  # stage: (sessions, streak in days, days since last seen)
    "new": (1, 1, 0),
    "building": (5, 2, 0),
    "established": (20, 3, 0),
    "deep": (40, 20, 0),
    "fading": (20, 0, 20),
}
_STAGES = list(STAGE_ACTIVITY)


def stage_contacts(cursor: Any, *, contact_ids: list[Any] | None = None, tenant_id: Any = None) -> int:
    """Give synthetic contacts (these, or all of a tenant) their stage and the activity that keeps it, as of now:
    run again on a kept tenant before it is measured (time passing fades every stage). Returns how many."""
    where, params = ("c.id = ANY(%s)", [contact_ids]) if contact_ids is not None else ("c.tenant_id = %s", [tenant_id])
    cursor.execute(
        "UPDATE contacts_contactstate s SET relationship_stage = a.stage, sessions_count = a.sessions, "
        "active_streak = a.streak, last_seen_at = now() - make_interval(days => a.idle), updated_at = now() "
        "FROM contacts_contact c CROSS JOIN LATERAL (SELECT CASE WHEN c.external_id = %s THEN 'deep' "
        "ELSE (%s::text[])[1 + abs(hashtext(c.external_id)) %% 5] END AS stage) p "
        "JOIN unnest(%s::text[], %s::int[], %s::int[], %s::int[]) AS a(stage, sessions, streak, idle) "
        f"ON a.stage = p.stage WHERE s.contact_id = c.id AND {where}",
        [
            HEAVY,
            _STAGES,
            _STAGES,
            *[[activity[index] for activity in STAGE_ACTIVITY.values()] for index in range(3)],
            *params,
        ],
    )
    return int(cursor.rowcount)


class Seeder:
    """Loads the rows [start, end) of a plan into a tenant; call `load` again with a larger end to grow it
    (the bench grows one tenant 10k → 100k → 1M). Entities and contacts created so far are remembered."""

    def __init__(
        self,
        *,
        tenant: Tenant,
        plan: Plan,
        entries: list[PoolEntry],
        vectors: np.ndarray,
        log: Callable[[str], None] = lambda _: None,
        chunk: int = CHUNK,
    ) -> None:
        self.tenant, self.plan, self.entries, self.vectors, self.log, self.chunk = (
            tenant,
            plan,
            entries,
            vectors,
            log,
            chunk,
        )
        self.now = timezone.now()
        self.contacts: dict[str, uuid.UUID] = {}
        self.entities: dict[tuple[uuid.UUID | None, str, str], uuid.UUID] = {}
        self._new_entities: list[tuple[uuid.UUID, uuid.UUID | None, str, str]] = []

    # -- who, what ---------------------------------------------------------------------------------------

    def external_id(self, owner: tuple[str, int]) -> str | None:
        kind, number = owner
        if kind == "brain":
            return None
        return HEAVY if kind == HEAVY else f"c{number}"

    def session(self, i: int, owner: tuple[str, int]) -> str:
        kind, number = owner
        if kind == "light":
            position = self.plan.light_before(i) - self.plan.light_start(number)
            return f"c{number}-s{position // SESSION_TURNS}"
        return f"{kind}-s{number // SESSION_TURNS}"

    # -- loading -----------------------------------------------------------------------------------------

    def load(
        self, start: int, end: int, *, rebuild_indexes: bool | None = None, build_indexes: bool = True
    ) -> LoadReport:
        """Rows [start, end) of the plan. `rebuild_indexes` None: drop and rebuild the HNSW/GIN indexes when the
        load is large (REBUILD_FROM, and at least the table's size). `build_indexes=False` leaves them to the
        caller (`build_missing_indexes`: the bench times it apart), unless the load fails."""
        report = LoadReport()
        if end <= start:
            return report
        table_rows = _estimated_rows()
        rebuild = rebuild_indexes if rebuild_indexes is not None else (end - start) >= max(REBUILD_FROM, table_rows)
        began = time.perf_counter()
        if rebuild:
            self.log(
                f"dropping {', '.join(REBUILT_INDEXES)} for the load (table-wide: other tenants' searches go "
                "without them until they are built again)"
            )
            _drop_indexes()
        try:
            tenant_bind(self.tenant.pk)
            try:
                with _copy_cursor() as cursor:
                    cursor.execute(
                        f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE} ("
                        + ", ".join(f"{name} {kind}" for name, kind, _ in _STAGE_COLUMNS)
                        + ")"
                    )
                    for chunk_start in range(start, end, self.chunk):
                        chunk_end = min(end, chunk_start + self.chunk)
                        with transaction.atomic():
                            self._load_chunk(cursor, chunk_start, chunk_end, report)
                        report.memories += chunk_end - chunk_start
                        elapsed = time.perf_counter() - began
                        self.log(
                            f"  {chunk_end:>9,} / {end:,} memories ({report.memories / elapsed:,.0f}/s, "
                            f"{report.contacts:,} contacts and {report.entities:,} entities new)"
                        )
                    cursor.execute(f"DROP TABLE IF EXISTS {_STAGE}")
                self._count_mentions()
            finally:
                tenant_reset()
        except BaseException:
            build_missing_indexes(log=self.log)  # never leave the table without them
            raise
        report.seconds_load = time.perf_counter() - began
        if not build_indexes:
            return report
        if rebuild or _missing_indexes():
            report.seconds_index = build_missing_indexes(log=self.log)
        began = time.perf_counter()
        with connection.cursor() as cursor:
            for table in ("memories_memory", "memories_memoryentity", "entities_entity", "contacts_contact"):
                cursor.execute(f"ANALYZE {table}")
        report.seconds_analyze = time.perf_counter() - began
        return report

    def _load_chunk(self, cursor: Any, start: int, end: int, report: LoadReport) -> None:
        rng = np.random.default_rng([self.plan.seed, start])
        owners = [self.plan.owner(i) for i in range(start, end)]
        self._ensure_contacts(cursor, owners, report)
        count = end - start
        picks = rng.integers(0, len(self.entries), count)
        noisy = self.vectors[picks] + rng.normal(0.0, NOISE, (count, self.vectors.shape[1])).astype(np.float32)
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        previous = self.vectors[np.roll(picks, 1)]  # the turn before, in the same conversation
        context = noisy + 0.5 * previous
        context /= np.linalg.norm(context, axis=1, keepdims=True)
        embeddings, context_embeddings = _halfvec_rows(noisy), _halfvec_rows(context)
        ages = rng.uniform(0, 400 * 86400, count)
        access_ages = ages * rng.uniform(0, 1, count)
        importances = rng.uniform(0.2, 0.95, count)
        accesses = rng.integers(0, 30, count)
        qualifier_picks = rng.integers(0, 1000, count)
        ids = [uuid.uuid4() for _ in range(count)]  # random, not the plan's: two tenants of one plan never collide
        texts: list[str] = []
        links: list[tuple[uuid.UUID, uuid.UUID]] = []
        rows = []
        for offset, i in enumerate(range(start, end)):
            entry = self.entries[picks[offset]]
            qualifier = entry.qualifiers[qualifier_picks[offset] % len(entry.qualifiers)]
            slots = {**entry.slots, "year": str(2005 + qualifier_picks[offset] % 20)}
            content = entry.text + qualifier.format(**slots)
            occurred = self.now - timedelta(seconds=float(ages[offset]))
            index_terms = (
                f"{occurred.day} {MONTHS[occurred.month - 1]} {occurred.year}" if entry.memory_type == "episode" else ""
            )
            texts.append(content)
            contact_id = self.contacts.get(self.external_id(owners[offset]) or "")
            named = list(entry.entities)
            if "{name}" in qualifier:
                named.append(("person", slots["name"]))
            if "{place}" in qualifier:
                named.append(("place", slots["place"]))
            for entity_type, name in dict.fromkeys(named):
                links.append((ids[offset], self._entity(contact_id, entity_type, name)))
            rows.append(
                [
                    ids[offset],
                    contact_id,
                    entry.memory_type,
                    content,
                    content_hash(memory_text(content=content, index_terms=index_terms)),
                    embeddings[offset],
                    context_embeddings[offset],
                    "",  # context words: below, once the neighbours' texts are known
                    index_terms,
                    float(importances[offset]),
                    0.005,
                    int(accesses[offset]),
                    float(ages[offset]),
                    float(access_ages[offset]),
                    self.session(i, owners[offset]),
                    int(i),
                ]
            )
        for offset, row in enumerate(rows):
            if row[2] == "episode":  # its words with the turns before and after it (ingest's context_vector)
                row[7] = "\n".join(texts[max(0, offset - 1) : offset + 2])
        report.entities += self._flush_entities(cursor)
        cursor.execute(f"TRUNCATE {_STAGE}")
        with cursor.copy(
            f"COPY {_STAGE} ({', '.join(name for name, _, _ in _STAGE_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types([oid or cursor.halfvec_oid for _, _, oid in _STAGE_COLUMNS])
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            "INSERT INTO memories_memory (id, created_at, updated_at, tenant_id, contact_id, memory_type, content, "
            "content_hash, embedding, context_embedding, embedding_model, context_vector, index_terms, importance, "
            "base_importance, decay_rate, access_count, accessed_at, occurred_at, valid_from, slot, key, "
            "is_compressed, source_session_id, source_sequence, is_pinned, deletion_reason, source_message_ids, "
            "source_event_ids, metadata, created_by) "
            "SELECT s.id, now() - make_interval(secs => s.age_seconds), now(), %s, s.contact_id, s.memory_type, "
            "s.content, s.content_hash, s.embedding, s.context_embedding, %s, "
            "CASE WHEN s.context_words <> '' THEN to_tsvector('english', s.context_words) END, s.index_terms, "
            "s.importance, 0.5, s.decay_rate, s.access_count, now() - make_interval(secs => s.access_age_seconds), "
            "now() - make_interval(secs => s.age_seconds), now() - make_interval(secs => s.age_seconds), '', '', "
            "false, s.source_session_id, s.source_sequence, false, '', '{}', '{}', '{}', %s FROM " + _STAGE + " s",
            [self.tenant.pk, EMBEDDING_MODEL, ACTOR],
        )
        cursor.execute(
            "INSERT INTO memories_memoryrevision (memory_id, tenant_id, action, actor, before, after, note, "
            "created_at) SELECT s.id, %s, 'created', %s, '{}', jsonb_build_object('content', s.content, "
            "'memory_type', s.memory_type, 'importance', s.importance, 'is_pinned', false, 'is_compressed', false, "
            "'valid_to', null, 'superseded_by', null, 'outdated_by', null, 'deleted_at', null, "
            "'access_count', s.access_count, 'source_message_ids', '[]'::jsonb), '', now() FROM " + _STAGE + " s",
            [self.tenant.pk, ACTOR],
        )
        _staged(
            cursor,
            "synthetic_link_stage (memory_id uuid, entity_id uuid)",
            links,
            "INSERT INTO memories_memoryentity (memory_id, entity_id) SELECT memory_id, entity_id FROM "
            "synthetic_link_stage",
        )
        report.links += len(links)

    def _ensure_contacts(self, cursor: Any, owners: list[tuple[str, int]], report: LoadReport) -> None:
        wanted = {external for owner in owners if (external := self.external_id(owner)) is not None}
        missing = sorted(wanted - set(self.contacts))
        if not missing:
            return
        cursor.execute(
            "SELECT external_id, id FROM contacts_contact WHERE tenant_id = %s AND external_id = ANY(%s)",
            [self.tenant.pk, missing],
        )
        self.contacts.update({external: pk for external, pk in cursor.fetchall()})
        created = [external for external in missing if external not in self.contacts]
        if not created:
            return
        rng = random.Random(f"{self.plan.seed}-{created[0]}")
        rows = []
        for external in created:
            pk = uuid.uuid4()
            self.contacts[external] = pk
            rows.append((pk, external, f"{rng.choice(NAMES)} {rng.choice('ABCDEFGHJKLMNPRSTVW')}."))
        _staged(
            cursor,
            "synthetic_contact_stage (id uuid, external_id text, display_name text)",
            rows,
            "INSERT INTO contacts_contact (id, created_at, updated_at, tenant_id, external_id, display_name, channel, "
            "metadata, last_seen_at) SELECT id, now(), now(), %s, external_id, display_name, 'synthetic', '{}', now() "
            "FROM synthetic_contact_stage",
            [self.tenant.pk],
        )
        cursor.execute(
            "INSERT INTO contacts_contactstate (contact_id, tenant_id, mood, mood_confidence, energy, style, "
            "usual_mood, usual_energy, relationship_stage, active_streak, sessions_count, last_seen_at, churn_risk, "
            "crisis_flag, updated_at) SELECT c.id, c.tenant_id, 'neutral', 0.5, 'medium', 'casual', '', '', "
            "'new', 1, 1, now(), 0, false, now() FROM contacts_contact c WHERE c.id = ANY(%s)",
            [[pk for pk, _, _ in rows]],
        )
        stage_contacts(cursor, contact_ids=[pk for pk, _, _ in rows])
        report.contacts += len(rows)

    def _entity(self, contact_id: uuid.UUID | None, entity_type: str, name: str) -> uuid.UUID:
        key = (contact_id, entity_type, name)
        pk = self.entities.get(key)
        if pk is None:
            pk = uuid.uuid4()
            self.entities[key] = pk
            self._new_entities.append((pk, contact_id, entity_type, name))
        return pk

    def _flush_entities(self, cursor: Any) -> int:
        rows, self._new_entities = self._new_entities, []
        if not rows:
            return 0
        _staged(
            cursor,
            "synthetic_entity_stage (id uuid, contact_id uuid, entity_type text, slug text, display_name text)",
            [(pk, contact_id, entity_type, slugify(name), name) for pk, contact_id, entity_type, name in rows],
            "INSERT INTO entities_entity (id, created_at, updated_at, tenant_id, contact_id, entity_type, slug, "
            "display_name, metadata, aliases, mention_count, last_seen_at) SELECT id, now(), now(), %s, contact_id, "
            "entity_type, slug, display_name, '{}', '{}', 1, now() FROM synthetic_entity_stage",
            [self.tenant.pk],
        )
        return len(rows)

    def _count_mentions(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE entities_entity e SET mention_count = l.n FROM (SELECT me.entity_id, count(*) AS n "
                "FROM memories_memoryentity me JOIN entities_entity x ON x.id = me.entity_id "
                "WHERE x.tenant_id = %s GROUP BY me.entity_id) l WHERE e.id = l.entity_id AND e.mention_count <> l.n",
                [self.tenant.pk],
            )


# -- indexes, sizes, removal ---------------------------------------------------------------------------------


def _estimated_rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'memories_memory'::regclass")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def _existing_indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memories_memory'")
        return {row[0] for row in cursor.fetchall()}


def _missing_indexes() -> list[str]:
    existing = _existing_indexes()
    return [name for name in REBUILT_INDEXES if name not in existing]


def _drop_indexes() -> None:
    with connection.cursor() as cursor:
        for name in REBUILT_INDEXES:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")


def build_missing_indexes(*, log: Callable[[str], None] = lambda _: None) -> dict[str, float]:
    """Build the indexes of REBUILT_INDEXES that are missing, from the model's definitions (what the migrations
    created), each in its own transaction with maintenance_work_mem 1.5 GB; seconds per index."""
    definitions = {index.name: index for index in Memory._meta.indexes}
    seconds: dict[str, float] = {}
    for name in _missing_indexes():
        log(f"building {name}…")
        began = time.perf_counter()
        with connection.schema_editor() as editor:  # atomic: SET LOCAL holds for the build only
            editor.execute(f"SET LOCAL maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
            editor.add_index(Memory, definitions[name])
        seconds[name] = time.perf_counter() - began
        log(f"  {name}: {seconds[name]:.1f} s")
    return seconds


def table_sizes() -> dict[str, int]:
    """Bytes: the memories table (heap + TOAST), all its indexes, the HNSW index alone, the entity links and
    entities (heap + indexes)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_table_size('memories_memory'), pg_indexes_size('memories_memory'), "
            "coalesce((SELECT pg_relation_size(c.oid) FROM pg_class c WHERE c.relname = 'memory_embedding_hnsw'), 0), "
            "pg_total_relation_size('memories_memoryentity'), pg_total_relation_size('entities_entity'), "
            "pg_total_relation_size('memories_memoryrevision')"
        )
        row = cursor.fetchone()
    assert row is not None
    keys = ("memories_table", "memories_indexes", "hnsw", "memory_entity_links", "entities", "revisions")
    return dict(zip(keys, (int(value) for value in row), strict=True))


def tenant_purge(*, tenant: Tenant) -> None:
    """Delete a (large) tenant in set-based statements, then the tenant itself (tenant_delete: its Redis keys
    too). Django's cascade collects every memory in Python first because of the self-references — minutes
    and gigabytes for a million memories."""
    tables = [
        "memories_memoryentity me USING memories_memory m WHERE me.memory_id = m.id AND m.tenant_id = %s",
        "memories_memoryrevision WHERE tenant_id = %s",
        "memories_memory WHERE tenant_id = %s",
        "entities_entity WHERE tenant_id = %s",
        "contacts_contactstate WHERE tenant_id = %s",
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        for clause in tables:
            cursor.execute(f"DELETE FROM {clause}", [tenant.pk])
    from apps.tenants.services import tenant_delete

    tenant_delete(tenant=tenant)


def seed_tenant(
    *,
    tenant: Tenant,
    memories: int,
    contacts: int,
    pool: int = 4000,
    seed: int = 29,
    log: Callable[[str], None] = lambda _: None,
    rebuild_indexes: bool | None = None,
) -> LoadReport:
    """seed_synthetic: `memories` over `contacts` contacts in an empty tenant (refused when it holds any)."""
    if Memory.objects.filter(tenant=tenant).exists():
        raise ValueError(
            f"tenant '{tenant.slug}' already holds memories: seed_synthetic fills an empty tenant only "
            "(choose another --tenant, or delete this one first)"
        )
    entries = pool_entries(pool, seed=seed)
    vectors = pool_vectors(entries, log=log)
    seeder = Seeder(
        tenant=tenant,
        plan=Plan(memories=memories, contacts=contacts, seed=seed),
        entries=entries,
        vectors=vectors,
        log=log,
    )
    return seeder.load(0, memories, rebuild_indexes=rebuild_indexes)


def describe(report: LoadReport) -> str:
    index = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.seconds_index.items()) or "kept"
    return (
        f"{report.memories:,} memories, {report.contacts:,} contacts, {report.entities:,} entities, "
        f"{report.links:,} entity links in {report.seconds_load:.1f} s "
        f"({report.memories / max(report.seconds_load, 1e-9):,.0f}/s); indexes: {index}; "
        f"ANALYZE {report.seconds_analyze:.1f} s"
    )


def as_json(report: LoadReport) -> str:
    return json.dumps(report.__dict__)


def postgres_memory_bytes() -> int | None:
    """Proportional set size (PSS: shared pages split among the processes that map them) of the embedded
    PostgreSQL's postmaster and children, from /proc; None for a server this machine does not run."""
    host = str(connection.settings_dict.get("HOST") or "")
    pid_file = Path(host) / "postmaster.pid"
    if not host.startswith("/") or not pid_file.exists():
        return None
    postmaster = int(pid_file.read_text().split()[0])
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if int(entry.name) != postmaster and parent != postmaster:
                continue
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue
    return total
