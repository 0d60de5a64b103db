"""The one write path of semantic memory: dedup → reinforce, or supersede → create, with history.

Ingest, observations, explicit adds through the API, the memory processor's facts_to_embed and the
inspector all write through `memories_write`, so every memory gets the same embedding, importance,
deduplication and provenance rules.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.contrib.postgres.search import SearchVectorField
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from apps.contacts.models import Contact
from apps.conversations.models import Message
from apps.conversations.selectors import messages_turns_before
from apps.core.embeddings import (
    cache_scope,
    content_hash,
    cosine_threshold,
    get_embedder,
    memory_text,
    vector_literal,
)
from apps.core.rows import instances_insert
from apps.core.vectors import vector_from_send
from apps.entities.services import EntityLike, entity_upsert_many
from apps.memories import scoring
from apps.memories.extraction.cleaning import is_export_placeholder
from apps.memories.extraction.index_words import with_index_words
from apps.memories.extraction.rules import instruction_condition
from apps.memories.models import Memory, MemoryEntity, MemoryRevision
from apps.memories.models.memory import INDEX_TERMS_LENGTH
from apps.memories.selectors import EpisodeAnchor, episodes_before
from apps.memories.store.revisions import memory_snapshot, revision_record
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

RECENT_SAMPLE = 300  # memories compared for inline dedup and used for the novelty centroid
NOVELTY_FROM = 10  # a scope with fewer memories has no typical content: everything in it is novel
CORRECTION_SIMILARITY = 0.75  # an explicit correction without a slot supersedes the closest fact above this
POLARITY_FLIP_SIMILARITY = 0.80  # "likes X" → "doesn't like X": the newer preference supersedes


@dataclass(frozen=True)
class Candidate:
    """Something worth remembering, before it is embedded, scored and deduplicated."""

    memory_type: str
    content: str
    salience: float = 0.0
    slot: str = ""
    is_correction: bool = False
    polarity: int = 0
    entities: tuple[EntityLike, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    expires_at: datetime | None = None
    importance: float | None = None  # explicit (API add, pattern): skips the novelty/salience formula
    is_pinned: bool = False
    source_session_id: str = ""  # the conversation it came from (session compression and retrieval group by it)
    index_terms: str = ""  # indexed and embedded with the content (an episode's date); places are added on insert
    decay_rate: float | None = None  # overrides the type's default (session summaries decay like episodes)
    key: str = ""  # a client's keyed record (editing.memory_put): stored as given, never a duplicate or a correction
    context_words: str = ""  # an episode's context words, stored as its context_vector (sessions_context_words)

    @property
    def text_to_embed(self) -> str:
        return memory_text(content=self.content, index_terms=self.index_terms)


@dataclass(frozen=True)
class MemoryVectors:
    """Memories' own embeddings, and a context embedding for each that has an episode before it in its
    conversation (else None)."""

    own: np.ndarray
    context: list[np.ndarray | None]

    def __getitem__(self, positions: slice) -> MemoryVectors:
        return MemoryVectors(own=self.own[positions], context=self.context[positions])

    def take(self, positions: Sequence[int]) -> MemoryVectors:
        return MemoryVectors(own=self.own[list(positions)], context=[self.context[index] for index in positions])

    def __len__(self) -> int:
        return len(self.context)


def context_mix(*, own: np.ndarray, own_text: str, previous: np.ndarray, previous_text: str) -> np.ndarray:
    """A memory's context embedding: its own embedding and the one of the episode before it in its
    conversation, each weighted by its length in words, normalised — what mean pooling over both texts
    together gives, for no inference of its own. Embedding "the turn before + the memory" as one text cost
    an embedder call on twice the tokens for every memory (two thirds of an ingest's CPU); the mix retrieves
    the same (LoCoMo in-process R@10 0.8045 against 0.8046; docs/retrieval.md §3)."""
    mixed = max(1, len(own_text.split())) * own + max(1, len(previous_text.split())) * previous
    return mixed / (float(np.linalg.norm(mixed)) or 1.0)


def candidates_embed(candidates: Sequence[Candidate], *, scopes: str | Sequence[str]) -> MemoryVectors:
    """The candidates' own embeddings, in one embedder call (contexts: none; ingest mixes them, see
    `context_mix`). `scopes`: the embedding cache's namespace (`cache_scope`), one or one per candidate."""
    embedder = get_embedder()
    texts = [candidate.text_to_embed for candidate in candidates]
    own = embedder.embed_batch(texts, scopes=scopes) if texts else np.zeros((0, embedder.dimensions), dtype=np.float32)
    return MemoryVectors(own=own, context=[None] * len(texts))


def memories_embed(memories: Sequence[Memory], *, own: bool = True) -> MemoryVectors:
    """Stored memories' own embeddings (one embedder call; `own=False` takes the stored ones) and their
    context embeddings, mixed with the episode before each in its conversation (one statement)."""
    texts = [memory_text(content=memory.content, index_terms=memory.index_terms) for memory in memories]
    embedder = get_embedder()
    if own:
        scopes = [cache_scope(tenant_id=memory.tenant_id, contact_id=memory.contact_id) for memory in memories]
        vectors = (
            embedder.embed_batch(texts, scopes=scopes)
            if texts
            else np.zeros((0, embedder.dimensions), dtype=np.float32)
        )
    else:
        vectors = np.asarray([memory.embedding for memory in memories], dtype=np.float32).reshape(
            len(memories), embedder.dimensions
        )
    before = episodes_before(
        tenant_id=memories[0].tenant_id if memories else None,
        anchors=[
            EpisodeAnchor(memory.pk, memory.source_session_id, memory.occurred_at, memory.source_sequence)
            for memory in memories
            if memory.source_session_id and memory.source_sequence is not None
        ],
    )
    contexts: list[np.ndarray | None] = []
    for memory, vector, text in zip(memories, vectors, texts, strict=True):
        previous = before.get(memory.pk)
        contexts.append(
            context_mix(own=vector, own_text=text, previous=previous.embedding, previous_text=previous.text)
            if previous is not None
            else None
        )
    return MemoryVectors(own=vectors, context=contexts)


# what `memories_vectors_refresh` sets: the vectors, the model, and the metadata's instruction condition
EMBEDDING_FIELDS = ["embedding", "context_embedding", "embedding_model", "metadata"]
CONDITION_KEY = "instruction_condition"  # a standing instruction's condition in its metadata (memory_condition_idx)


def with_condition(metadata: dict[str, Any] | None, condition: str) -> dict[str, Any]:
    """`metadata` with `condition` as its instruction condition, or without one ("" or none): the key is Engram's,
    a client's own value never stays (it would put any memory among the instructions)."""
    kept = {name: value for name, value in (metadata or {}).items() if name != CONDITION_KEY}
    return {**kept, CONDITION_KEY: condition} if condition else kept


def condition_of(*, memory_type: str, content: str, key: str = "") -> str:
    """The condition of a standing instruction to the assistant ("draft revisions"; "" for any other
    memory). A client's keyed record is stored as given: no condition is read into it."""
    if memory_type != scoring.PREFERENCE or key:
        return ""
    return instruction_condition(content)


def with_conditions(vectors: MemoryVectors, conditions: Sequence[str], *, scopes: str | Sequence[str]) -> MemoryVectors:
    """A standing instruction's context embedding is its condition's, embedded alone (one embedder call for
    all of them; none when there is none): retrieval compares a question with what the user will be doing when
    the instruction applies ("How should I approach editing my draft?" with "draft revisions"),
    which the instruction's own text, about what the assistant is to do, does not say (retrieval/signals/
    condition.py). Every other memory keeps its context embedding."""
    positions = [index for index, condition in enumerate(conditions) if condition]
    if not positions:
        return vectors
    if not isinstance(scopes, str):
        scopes = [scopes[index] for index in positions]
    embedded = get_embedder().embed_batch([conditions[index] for index in positions], scopes=scopes)
    contexts = list(vectors.context)
    for index, vector in zip(positions, embedded, strict=True):
        contexts[index] = np.asarray(vector, dtype=np.float32)
    return MemoryVectors(own=vectors.own, context=contexts)


def memories_vectors_refresh(memories: Sequence[Memory]) -> None:
    """Recompute stored memories' own and context embeddings (one embedder call, and one for the conditions of
    standing instructions) and set them, with the model's name and the condition in the metadata, on the
    instances; the caller saves EMBEDDING_FIELDS."""
    conditions = [
        condition_of(memory_type=memory.memory_type, content=memory.content, key=memory.key) for memory in memories
    ]
    vectors = with_conditions(
        memories_embed(memories),
        conditions,
        scopes=[cache_scope(tenant_id=memory.tenant_id, contact_id=memory.contact_id) for memory in memories],
    )
    model = get_embedder().name
    for memory, vector, context_vector, condition in zip(
        memories, vectors.own, vectors.context, conditions, strict=True
    ):
        memory.embedding = vector.tolist()
        memory.context_embedding = context_vector.tolist() if context_vector is not None else None
        memory.embedding_model = model
        memory.metadata = with_condition(memory.metadata, condition)


def memories_context_embed(*, memory_ids: Sequence[Any]) -> int:
    """Give memories that have none their context embeddings (from the stored own embeddings: no inference).
    Memories edited, reembedded, superseded or deleted in the meantime are left alone. Returns how many got
    one."""
    memories = list(
        Memory.objects.filter(
            pk__in=list(memory_ids),
            context_embedding__isnull=True,
            embedding__isnull=False,
            valid_to__isnull=True,
            deleted_at__isnull=True,
        ).only(
            "pk",
            "tenant_id",
            "content",
            "content_hash",
            "index_terms",
            "embedding",
            "source_session_id",
            "occurred_at",
            "source_sequence",
        )
    )
    vectors = memories_embed(memories, own=False)
    embedded = [
        (memory, vector) for memory, vector in zip(memories, vectors.context, strict=True) if vector is not None
    ]
    if not embedded:
        return 0
    with connection.cursor() as cursor:
        # one statement; only where the content is still the one embedded (an edit in between recomputed it)
        cursor.execute(
            "UPDATE memories_memory m SET context_embedding = v.embedding::halfvec "
            "FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(id, content_hash, embedding) "
            "WHERE m.id = v.id AND m.content_hash = v.content_hash AND m.context_embedding IS NULL",
            [
                [memory.pk for memory, _ in embedded],
                [memory.content_hash for memory, _ in embedded],
                [vector_literal(vector) for _, vector in embedded],
            ],
        )
        return cursor.rowcount


@dataclass(frozen=True)
class MemoryChange:
    memory: Memory
    action: str  # created | reinforced | skipped
    superseded: tuple[Memory, ...] = ()
    reason: str = ""


class _ScopeSample:
    """The scope's recent current memories, kept up to date while a batch of candidates is written. The rows
    live in a buffer with room to grow (a copy of the whole matrix per memory added was ~0.1 ms of each ingested
    message); `matrix` is the filled part, the same array numpy would have built row by row."""

    def __init__(
        self, ids: list[Any], types: list[str], polarity: list[int], matrix: np.ndarray, centroid: np.ndarray | None
    ) -> None:
        self.ids, self.types, self.polarity, self.centroid = ids, types, polarity, centroid
        self._rows = np.ascontiguousarray(matrix)  # (capacity, d); the first len(ids) rows are the sample
        self._type_codes = np.array([_type_code(kind) for kind in types], dtype=np.int64)

    @property
    def matrix(self) -> np.ndarray:  # (n, d), unit rows
        return self._rows[: len(self.ids)]

    def add(self, memory: Memory, vector: np.ndarray) -> None:
        count = len(self.ids)
        if count == len(self._rows):
            grown = np.empty((max(8, 2 * count), vector.shape[0]), dtype=np.result_type(self._rows, vector))
            grown[:count] = self._rows[:count]
            self._rows = grown
            self._type_codes = np.resize(self._type_codes, len(grown))
        self._rows[count] = vector
        self._type_codes[count] = _type_code(memory.memory_type)
        self.ids.append(memory.pk)
        self.types.append(memory.memory_type)
        self.polarity.append(int(memory.metadata.get("polarity", 0)))
        self.centroid = vector.copy() if self.centroid is None else (self.centroid * count + vector) / (count + 1)

    def best_match(self, vector: np.ndarray, memory_type: str) -> tuple[Any, float, int] | None:
        """The most similar memory of the type (the first of equals): (id, cosine, its polarity)."""
        count = len(self.ids)
        if not count:
            return None
        similarities = self.matrix @ vector
        of_type = self._type_codes[:count] == _type_code(memory_type)
        if not of_type.any():
            return None
        index = int(np.argmax(np.where(of_type, similarities, -np.inf)))
        return self.ids[index], float(similarities[index]), self.polarity[index]


_TYPE_CODES: dict[str, int] = {}


def _type_code(memory_type: str) -> int:
    return _TYPE_CODES.setdefault(memory_type, len(_TYPE_CODES))


def current_memories(*, tenant: Tenant, contact: Contact | None) -> Any:
    """Current memories of a scope, without the heavy columns (embedding, tsvector) unless asked for."""
    return Memory.objects.filter(tenant=tenant, contact=contact, valid_to__isnull=True, deleted_at__isnull=True).defer(
        "embedding", "search_vector"
    )


def parse_vector(text: str) -> np.ndarray:
    """pgvector's text form '[0.1,0.2,...]' → float32 array (numpy's C parser, ~50× faster than split)."""
    return np.fromstring(text[1:-1], sep=",", dtype=np.float32)


def _scope_sample(*, tenant: Tenant, contact: Contact | None, dimensions: int) -> _ScopeSample:
    contact_clause = "contact_id = %s" if contact is not None else "contact_id IS NULL"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, memory_type, coalesce((metadata->>'polarity')::int, 0), vector_send(embedding::vector) "
            f"FROM memories_memory WHERE tenant_id = %s AND {contact_clause} AND valid_to IS NULL "
            "AND deleted_at IS NULL AND NOT is_compressed AND embedding IS NOT NULL "
            "ORDER BY created_at DESC LIMIT %s",
            [tenant.pk, *([contact.pk] if contact is not None else []), RECENT_SAMPLE],
        )
        rows = cursor.fetchall()
    if not rows:
        return _ScopeSample([], [], [], np.zeros((0, dimensions), dtype=np.float32), None)
    matrix = np.vstack([vector_from_send(row[3]) for row in rows])
    return _ScopeSample(
        ids=[row[0] for row in rows],
        types=[row[1] for row in rows],
        polarity=[int(row[2]) for row in rows],
        matrix=matrix,
        centroid=matrix.mean(axis=0),
    )


def _reinforce(
    memory: Memory, *, at: datetime, source_message_ids: Sequence[str], source_event_ids: Sequence[Any]
) -> None:
    """A mention again: importance +0.05, one more use, the provenance appended (in memory; the caller saves)."""
    memory.importance = round(scoring.clamp(memory.importance + scoring.REINFORCE_BOOST), 4)
    memory.base_importance = memory.importance
    memory.access_count += 1
    memory.accessed_at = max(memory.accessed_at, at)
    memory.source_message_ids = _union(memory.source_message_ids, source_message_ids)
    memory.source_event_ids = _union(memory.source_event_ids, source_event_ids)


REINFORCED_FIELDS = [
    "importance",
    "base_importance",
    "access_count",
    "accessed_at",
    "source_message_ids",
    "source_event_ids",
    "updated_at",
]


def memory_supersede(*, old: Memory, new: Memory, actor: str, at: datetime, note: str = "") -> Memory:
    """Mark `old` as no longer current: kept for history, excluded from context by default. The episodes
    that stated it are marked outdated by `new` (`episodes_outdate`)."""
    before = memory_snapshot(old)
    old.valid_to = at
    old.superseded_by = new
    old.save(update_fields=["valid_to", "superseded_by", "updated_at"])
    revision_record(
        memory=old, action=MemoryRevision.Action.SUPERSEDED, actor=actor, before=before, related_memory=new, note=note
    )
    episodes_outdate(corrections=[(old, new)], actor=actor)
    return old


def episodes_outdate(*, corrections: Sequence[tuple[Memory, Memory]], actor: str) -> int:
    """When a fact or preference is superseded (old, new), the episodes of the turns that stated the old
    value ("Our blog traffic was 500 visits last week.") are marked outdated by the correction: they stay
    (it was said), but rank below the correction and are flagged in context (docs/retrieval.md §5). An
    episode of the correcting turn itself is left alone. One read and two writes for all `corrections`,
    which share a scope. Returns how many episodes were marked."""
    stated = [(old, new) for old, new in corrections if old.memory_type != scoring.EPISODE and old.source_message_ids]
    if not stated:
        return 0
    scope = stated[0][0]
    owner = Q(contact_id=scope.contact_id) if scope.contact_id is not None else Q(contact__isnull=True)
    candidates = Memory.objects.filter(
        owner,
        tenant_id=scope.tenant_id,
        memory_type=scoring.EPISODE,
        valid_to__isnull=True,
        deleted_at__isnull=True,
        outdated_by__isnull=True,
        source_message_ids__overlap=sorted({mid for old, _ in stated for mid in old.source_message_ids}),
    )
    outdated: list[Memory] = []
    revisions: list[MemoryRevision] = []
    for episode in candidates:
        sources = set(episode.source_message_ids)
        for old, new in stated:
            if sources & set(old.source_message_ids) and not sources & set(new.source_message_ids):
                before = memory_snapshot(episode)
                episode.outdated_by = new
                outdated.append(episode)
                revisions.append(
                    MemoryRevision(
                        memory=episode,
                        tenant_id=episode.tenant_id,
                        action=MemoryRevision.Action.OUTDATED,
                        actor=actor,
                        before=before,
                        after=memory_snapshot(episode),
                        related_memory=new,
                        note=f"stated what {old.pk} said; corrected"[:300],
                    )
                )
                break
    if outdated:
        now = timezone.now()
        for episode in outdated:
            episode.updated_at = now
        Memory.objects.bulk_update(outdated, ["outdated_by", "updated_at"])
        instances_insert(revisions)
    return len(outdated)


def _union(existing: Sequence[Any], extra: Sequence[Any]) -> list[Any]:
    merged = list(existing)
    for item in extra:
        if item not in merged:
            merged.append(item)
    return merged


@dataclass(frozen=True)
class Provenance:
    """Where a candidate came from: when it happened, the client message ids, the events, and the ledger
    position of its message (turns that share a timestamp keep their order)."""

    occurred_at: datetime
    source_message_ids: tuple[str, ...] = ()
    source_event_ids: tuple[Any, ...] = ()
    source_sequence: int | None = None


class _ScopeWriter:
    """Writes one scope's candidates in order with a constant number of statements: the current memories
    the candidates could duplicate or replace (same content hash, same slot) are read in two statements
    up front; decisions are made in order in memory, each seeing the ones before it (a candidate that
    repeats an earlier one of the same batch reinforces it); then the new memories, their entity links,
    the reinforced and superseded memories and every revision are written in bulk."""

    def __init__(self, *, tenant: Tenant, contact: Contact | None, candidates: Sequence[Candidate], actor: str) -> None:
        self.tenant, self.contact, self.actor = tenant, contact, actor
        scope = current_memories(tenant=tenant, contact=contact)
        hashes = {content_hash(candidate.content) for candidate in candidates}
        slots = {candidate.slot for candidate in candidates if candidate.slot}
        self.by_hash: dict[tuple[str, str], Memory] = {}
        self.by_slot: dict[tuple[str, str], list[Memory]] = {}
        self.loaded: dict[Any, Memory] = {}
        for memory in scope.filter(content_hash__in=hashes).order_by("-created_at"):  # the newest of a hash first
            self._track(memory)
        if slots:
            for memory in scope.filter(slot__in=slots).exclude(pk__in=list(self.loaded)):
                self._track(memory)
        self.created: list[Memory] = []
        self.links: list[tuple[Memory, tuple[EntityLike, ...], datetime]] = []
        self.changed: dict[Any, Memory] = {}  # existing memories reinforced or superseded
        self.corrections: list[tuple[Memory, Memory]] = []  # (superseded, its replacement)
        self.revisions: list[MemoryRevision] = []

    def _track(self, memory: Memory) -> None:
        self.loaded[memory.pk] = memory
        self.by_hash.setdefault((memory.memory_type, memory.content_hash), memory)
        if memory.slot:
            self.by_slot.setdefault((memory.memory_type, memory.slot), []).append(memory)

    def _untrack(self, memory: Memory) -> None:
        if self.by_hash.get((memory.memory_type, memory.content_hash)) is memory:
            del self.by_hash[(memory.memory_type, memory.content_hash)]
        holders = self.by_slot.get((memory.memory_type, memory.slot), [])
        if memory in holders:
            holders.remove(memory)

    def get(self, memory_id: Any) -> Memory | None:
        """A current memory of the scope by id: written or read in this batch, else from the database."""
        memory = self.loaded.get(memory_id)
        if memory is None:
            memory = current_memories(tenant=self.tenant, contact=self.contact).filter(pk=memory_id).first()
            if memory is not None:
                self._track(memory)
        return memory if memory is not None and memory.valid_to is None else None

    def revision(self, memory: Memory, action: str, *, before: dict[str, Any] | None = None, **fields: Any) -> None:
        self.revisions.append(
            MemoryRevision(
                memory=memory,
                tenant_id=memory.tenant_id,
                action=action,
                actor=self.actor,
                before=before or {},
                after=memory_snapshot(memory),
                related_memory=fields.get("related_memory"),
                note=str(fields.get("note", ""))[:300],
            )
        )

    def reinforce(self, memory: Memory, *, at: datetime, provenance: Provenance, note: str) -> None:
        before = memory_snapshot(memory)
        _reinforce(
            memory,
            at=at,
            source_message_ids=provenance.source_message_ids,
            source_event_ids=provenance.source_event_ids,
        )
        if memory not in self.created:
            self.changed[memory.pk] = memory
        self.revision(memory, MemoryRevision.Action.REINFORCED, before=before, note=note)

    def create(self, memory: Memory, entities: tuple[EntityLike, ...], at: datetime) -> None:
        self.created.append(memory)
        self.loaded[memory.pk] = memory
        self._track(memory)
        self.by_hash[(memory.memory_type, memory.content_hash)] = memory  # the newest of its hash now
        if entities:
            self.links.append((memory, entities, at))
        self.revision(memory, MemoryRevision.Action.CREATED)

    def supersede(self, old: Memory, *, new: Memory, at: datetime, note: str) -> None:
        before = memory_snapshot(old)
        old.valid_to = at
        old.superseded_by = new
        self._untrack(old)
        if old not in self.created:
            self.changed[old.pk] = old
        self.revision(old, MemoryRevision.Action.SUPERSEDED, before=before, related_memory=new, note=note)
        self.corrections.append((old, new))

    def flush(self) -> None:
        instances_insert(self.created)  # bulk_create without printing the vectors as text (apps/core/rows.py)
        if self.links:
            mentions = [(entity, at) for _, entities, at in self.links for entity in entities]
            resolved = entity_upsert_many(
                tenant=self.tenant,
                contact=self.contact,
                entities=[entity for entity, _ in mentions],
                at=max(at for _, at in mentions),
            )
            links: list[MemoryEntity] = []
            for memory, entities, _ in self.links:
                for key in dict.fromkeys(f"{entity.entity_type}:{entity.slug}" for entity in entities):
                    if key in resolved:
                        links.append(MemoryEntity(memory=memory, entity=resolved[key]))
            MemoryEntity.objects.bulk_create(links, ignore_conflicts=True)
        if self.changed:
            now = timezone.now()
            for memory in self.changed.values():
                memory.updated_at = now
            Memory.objects.bulk_update(list(self.changed.values()), [*REINFORCED_FIELDS, "valid_to", "superseded_by"])
        instances_insert(self.revisions)
        episodes_outdate(corrections=self.corrections, actor=self.actor)


@transaction.atomic
def memories_write(
    *,
    tenant: Tenant,
    contact: Contact | None,
    candidates: Sequence[Candidate],
    occurred_at: datetime | None = None,
    actor: str,
    source_message_ids: Sequence[str] = (),
    source_event_ids: Sequence[Any] = (),
    source_sequence: int | None = None,
    provenance: Sequence[Provenance] | None = None,
    vectors: MemoryVectors | None = None,
    now: datetime | None = None,
    samples: dict[Any, _ScopeSample] | None = None,
) -> list[MemoryChange]:
    """Write candidates into the scope, in order; returns one change per candidate.

    - an exact or near duplicate (cosine ≥ 0.90, same type, same preference polarity) is not stored:
      the existing memory is reinforced (+0.05 importance, access count, provenance appended);
    - a fact with the same slot (or an explicit correction, or a flipped preference) supersedes the old;
    - a fact or preference whose spec importance (novelty × 0.6 + salience × 0.4) is below 0.3 is discarded
      unless it corrects something (`scoring.is_discarded`); episodes are kept: the record of the turn.

    Provenance is per candidate (`provenance`, a whole ingest batch in one call) or shared by all
    (`occurred_at` and the source ids). A constant number of statements however many candidates.
    """
    if not candidates:
        return []
    now = now or timezone.now()
    if provenance is None:
        if occurred_at is None:
            raise ValueError("memories_write needs occurred_at or a provenance per candidate")
        shared = Provenance(occurred_at, tuple(source_message_ids), tuple(source_event_ids), source_sequence)
        provenance = [shared] * len(candidates)
    embedder = get_embedder()
    scope_cache = cache_scope(tenant_id=tenant.pk, contact_id=contact.pk if contact is not None else None)
    if vectors is None:
        vectors = candidates_embed(candidates, scopes=scope_cache)
    conditions = [
        condition_of(memory_type=candidate.memory_type, content=candidate.content, key=candidate.key)
        for candidate in candidates
    ]
    vectors = with_conditions(vectors, conditions, scopes=scope_cache)
    # a batch (import) passes `samples` so the scope's recent memories are read once, then kept current
    scope_key = (tenant.pk, contact.pk if contact is not None else None)
    sample = samples.get(scope_key) if samples is not None else None
    if sample is None:
        sample = _scope_sample(tenant=tenant, contact=contact, dimensions=embedder.dimensions)
        if samples is not None:
            samples[scope_key] = sample
    writer = _ScopeWriter(tenant=tenant, contact=contact, candidates=candidates, actor=actor)
    # novelty is judged against the scope as it was before this batch: a message's episode is not "typical"
    # because the fact drawn from the same message was just written; nor is anything in a scope too small
    # to have a typical content yet
    typical = scoring.Novelty(
        sample.centroid.copy() if sample.centroid is not None and len(sample.ids) >= NOVELTY_FROM else None
    )
    changes = [
        _write_one(
            writer=writer,
            candidate=candidate,
            vector=np.asarray(vector, dtype=np.float32),
            context_vector=context_vector,
            condition=condition,
            sample=sample,
            typical=typical,
            provenance=origin,
            embedding_model=embedder.name,
            now=now,
        )
        for candidate, vector, context_vector, condition, origin in zip(
            candidates, vectors.own, vectors.context, conditions, provenance, strict=True
        )
    ]
    writer.flush()
    return changes


def _duplicate_of(
    *, writer: _ScopeWriter, candidate: Candidate, new_hash: str, match: tuple[Any, float, int] | None
) -> tuple[Memory, str] | None:
    if candidate.key:
        return None  # a keyed record is the client's: stored as given (editing.memory_put)
    exact = writer.by_hash.get((candidate.memory_type, new_hash))
    if exact is not None and not exact.key:
        return exact, "same content"
    if match is None:
        return None
    memory_id, similarity, polarity = match
    if similarity < cosine_threshold(scoring.duplicate_threshold(candidate.memory_type)) or (
        candidate.polarity and polarity and polarity != candidate.polarity
    ):
        return None
    existing = writer.get(memory_id)
    if existing is None or existing.key or (candidate.slot and existing.slot == candidate.slot):
        # same slot with different content is a correction, not a duplicate
        return None
    return existing, f"cosine {similarity:.3f}"


def _replaced_by(
    *, writer: _ScopeWriter, candidate: Candidate, new_hash: str, match: tuple[Any, float, int] | None
) -> list[Memory]:
    """Current memories the candidate replaces: same slot with other content, or (explicit correction /
    flipped preference) the closest memory of the type. A keyed record replaces nothing (memory_put edits it)."""
    if candidate.key:
        return []
    if candidate.slot:
        holders = writer.by_slot.get((candidate.memory_type, candidate.slot), [])
        return [memory for memory in holders if memory.content_hash != new_hash]
    if match is None:
        return []
    memory_id, similarity, polarity = match
    if candidate.is_correction and similarity >= cosine_threshold(CORRECTION_SIMILARITY):
        memory = writer.get(memory_id)
        return [memory] if memory is not None and memory.content_hash != new_hash else []
    polarity_flipped = candidate.polarity != 0 and polarity != 0 and polarity != candidate.polarity
    if polarity_flipped and similarity >= cosine_threshold(POLARITY_FLIP_SIMILARITY):
        memory = writer.get(memory_id)
        return [memory] if memory is not None else []
    return []


def _write_one(
    *,
    writer: _ScopeWriter,
    candidate: Candidate,
    vector: np.ndarray,
    context_vector: np.ndarray | None,
    condition: str,
    sample: _ScopeSample,
    typical: scoring.Novelty,
    provenance: Provenance,
    embedding_model: str,
    now: datetime,
) -> MemoryChange:
    tenant, contact = writer.tenant, writer.contact
    occurred_at = provenance.occurred_at
    new_hash = content_hash(candidate.content)
    # the closest memory of the type, for both questions below (nothing is added to the sample in between)
    match = sample.best_match(vector, candidate.memory_type)
    duplicate = _duplicate_of(writer=writer, candidate=candidate, new_hash=new_hash, match=match)
    if duplicate is not None:
        existing, why = duplicate
        # mentioned again now: a use that restarts the decay clock (see the accessed_at of a new memory)
        writer.reinforce(existing, at=now, provenance=provenance, note=f"duplicate of new mention ({why})")
        return MemoryChange(memory=existing, action="reinforced", reason=why)

    is_tenant_scope = contact is None
    type_default, decay_rate = scoring.type_defaults(candidate.memory_type, is_tenant_scope=is_tenant_scope)
    if candidate.decay_rate is not None:
        decay_rate = candidate.decay_rate
    targets = _replaced_by(writer=writer, candidate=candidate, new_hash=new_hash, match=match)
    if candidate.importance is not None:
        importance = round(scoring.clamp(candidate.importance), 4)
    else:
        novelty = typical(vector)
        raw, importance = scoring.importance_score(
            novelty=novelty, salience=candidate.salience, type_default=type_default
        )
        if scoring.is_discarded(memory_type=candidate.memory_type, raw=raw, replaces=bool(targets)):
            skipped = Memory(
                tenant=tenant, contact=contact, memory_type=candidate.memory_type, content=candidate.content
            )
            return MemoryChange(
                memory=skipped, action="skipped", reason=f"importance {raw} below {scoring.STORE_THRESHOLD}"
            )
    memory = Memory(
        tenant=tenant,
        contact=contact,
        memory_type=candidate.memory_type,
        content=candidate.content,
        content_hash=new_hash,
        embedding=vector.tolist(),
        context_embedding=context_vector.tolist() if context_vector is not None else None,
        context_vector=context_tsvector(candidate.context_words) if candidate.context_words else None,
        embedding_model=embedding_model,
        importance=importance,
        base_importance=importance,
        decay_rate=decay_rate,
        # the decay clock starts when Engram learns the memory, not when the event happened: decay measures
        # disuse of what Engram knows. Anchored at the event, an imported history of 2023 was three years
        # "unused" at its first search — the access flush decayed every episode it returned to 0 and out of
        # retrieval (LoCoMo through HTTP: R@10 0.81 → 0.07; docs/benchmarks.md, session 9). A live chat
        # learns at the time of the message, so nothing changes there.
        accessed_at=now,
        occurred_at=occurred_at,
        valid_from=occurred_at,
        slot=candidate.slot[:120],
        key=candidate.key,
        # the days it is about (embedded too), then the places and kinds of things it names and the words of the
        # question it answers (searched only)
        index_terms=with_index_words(
            candidate.index_terms[:INDEX_TERMS_LENGTH],
            candidate.content,
            limit=INDEX_TERMS_LENGTH,
            metadata=candidate.metadata,
        ),
        source_session_id=candidate.source_session_id,
        is_pinned=candidate.is_pinned,
        expires_at=candidate.expires_at,
        source_message_ids=list(provenance.source_message_ids),
        source_event_ids=list(provenance.source_event_ids),
        source_sequence=provenance.source_sequence,
        metadata=with_condition(
            {**candidate.metadata, "polarity": candidate.polarity} if candidate.polarity else candidate.metadata,
            condition,
        ),
        created_by=writer.actor,
    )
    writer.create(memory, tuple(candidate.entities), occurred_at)
    for old in targets:
        writer.supersede(old, new=memory, at=now, note=f"replaced by a newer {candidate.memory_type}")
    sample.add(memory, vector)
    return MemoryChange(memory=memory, action="created", superseded=tuple(targets))


def context_tsvector(words: str) -> RawSQL:
    """An episode's context words as the tsvector its row is inserted with: `to_tsvector('english', …)`, as
    SearchVector(Value(words), config="english") writes it, in SQL that `instances_insert` sends as it is
    (compiling SearchVector per row was ~0.1 ms of each ingested message)."""
    return RawSQL("to_tsvector('english'::regconfig, %s)", (words,), output_field=SearchVectorField())


def turn_text(message: Message) -> str:
    return turn_line(message.speaker, message.content)


def turn_line(speaker: str, content: str) -> str:
    return f"{speaker}: {content}" if speaker else content


TurnKey = tuple[str, datetime, str]  # (conversation id, occurred_at, message id): the episodes of one turn


def session_context_update(*, message: Message, session_id: str) -> None:
    sessions_context_update(turns=[(message, session_id)])


_PLACEHOLDERS_SKIPPED = 4  # placeholders in a row passed over (a few photos shared at once)


def sessions_context_words(*, turns: Sequence[tuple[Message, str]]) -> dict[TurnKey, str]:
    """context_vector's words: an episode's words together with the turns just before and after it in the
    ledger (stored as memories or not — a short question is often what its answer's turn is about; a chat
    export's placeholder is passed over, `cleaning.is_export_placeholder`). For each
    turn (message, conversation id), in order: its episode gets the words of the turn before, and the episode
    of the turn before gets this one's — as if the turns had been sent one by one. One statement; {turn:
    words} for the turns given and the turn before each."""
    if not turns:
        return {}
    # a chat export's placeholder ("<Media omitted>" after a shared photo) is no turn: it would take the place
    # of the turn before, whose words are the context (docs/benchmarks.md, Session 34); read a few more to skip it
    before = messages_turns_before(message_ids=[message.pk for message, _ in turns], count=2 + _PLACEHOLDERS_SKIPPED)
    texts: dict[TurnKey, str] = {}
    for message, session_id in turns:
        if is_export_placeholder(message.content):
            continue
        # newest first
        previous = [turn for turn in before.get(message.pk, []) if not is_export_placeholder(turn.content)][:2]
        lines = [turn_line(turn.speaker, turn.content) for turn in reversed(previous)]
        current = turn_text(message)
        texts[(session_id, message.occurred_at, message.external_id)] = "\n".join([*lines[-1:], current])
        if previous:
            texts[(session_id, previous[0].occurred_at, previous[0].external_id)] = "\n".join([*lines, current])
    return texts


def sessions_context_update(*, turns: Sequence[tuple[Message, str]]) -> None:
    """Set the context words (`sessions_context_words`) of the turns' episodes and of the turn before each.
    Two statements."""
    if turns:
        sessions_context_set(texts=sessions_context_words(turns=turns), tenant_id=turns[0][0].tenant_id)


def sessions_context_set(*, texts: dict[TurnKey, str], tenant_id: Any) -> None:
    """Store context words on the stored episodes of these turns (one statement). Ingest gives a new episode
    its words as it inserts it (`Candidate.context_words`) and calls this only for the turns it did not insert
    — the last turn of the batch before, whose words now reach into this batch: an UPDATE rewrites the whole
    row, every index entry included (the HNSW graph's too), so one per turn doubled the cost of an insert."""
    if not texts:
        return
    keys = list(texts)
    with connection.cursor() as cursor:
        cursor.execute(
            # memory_session_turn_idx finds each row (conversation, time); the message id confirms it
            "UPDATE memories_memory m SET context_vector = to_tsvector('english', v.words) "
            "FROM unnest(%s::text[], %s::timestamptz[], %s::text[], %s::text[]) "
            "AS v(session_id, at, message_id, words) "
            "WHERE m.tenant_id = %s AND m.memory_type = 'episode' AND m.source_session_id = v.session_id "
            "AND m.source_session_id <> '' AND m.occurred_at = v.at AND v.message_id = ANY(m.source_message_ids)",
            [
                [key[0] for key in keys],
                [key[1] for key in keys],
                [key[2] for key in keys],
                [texts[key] for key in keys],
                tenant_id,
            ],
        )


def working_memory_expiry(at: datetime) -> datetime:
    """`working` memories (seed type) live as long as the session window."""
    return at + timedelta(hours=24)
