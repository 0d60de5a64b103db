"""Typed results: one frozen dataclass per response body of the REST API (docs/api.md, /api/v1/schema/).
Fields the server adds later are ignored, so an older client keeps working against a newer server."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def _dt(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _required_dt(value: Any) -> datetime:
    parsed = _dt(value)
    if parsed is None:
        raise ValueError("a timestamp was expected")
    return parsed


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value or []]


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _optional_dict(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else None


@dataclass(frozen=True)
class Contact:
    contact_id: str
    display_name: str
    channel: str
    metadata: dict[str, Any]
    last_seen_at: datetime | None
    created_at: datetime | None
    updated_at: datetime | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Contact:
        return cls(
            contact_id=str(data["contact_id"]),
            display_name=str(data.get("display_name") or ""),
            channel=str(data.get("channel") or ""),
            metadata=_dict(data.get("metadata")),
            last_seen_at=_dt(data.get("last_seen_at")),
            created_at=_dt(data.get("created_at")),
            updated_at=_dt(data.get("updated_at")),
        )


@dataclass(frozen=True)
class MemoryChange:
    """What one ingested message did to memory: `action` is `created` or `reinforced`; `superseded` lists the
    ids of the memories this one replaced (a correction)."""

    id: str
    memory_type: str
    content: str
    importance: float
    action: str
    superseded: list[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemoryChange:
        return cls(
            id=str(data["id"]),
            memory_type=str(data["memory_type"]),
            content=str(data["content"]),
            importance=float(data["importance"]),
            action=str(data["action"]),
            superseded=_strings(data.get("superseded")),
        )


@dataclass(frozen=True)
class IngestResult:
    """`duplicate` is true when the message_id was seen before: nothing was written again. `extraction` is
    "done" when `memories` lists what the message stored, "pending" while the worker still extracts it."""

    event_id: str
    message_id: str
    duplicate: bool
    memories: list[MemoryChange]
    state: dict[str, Any] | None
    crisis: dict[str, Any]
    extraction: str = "done"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IngestResult:
        return cls(
            event_id=str(data["event_id"]),
            message_id=str(data["message_id"]),
            duplicate=bool(data["duplicate"]),
            memories=[MemoryChange.from_json(item) for item in data.get("memories") or []],
            state=_optional_dict(data.get("state")),
            crisis=_dict(data.get("crisis")),
            extraction=str(data.get("extraction") or "done"),
        )


@dataclass(frozen=True)
class SearchHit:
    id: str
    memory_type: str
    content: str
    importance: float
    score: float
    occurred_at: datetime | None
    is_compressed: bool
    outdated: bool
    sources: list[str]
    entities: list[str]
    explain: dict[str, Any] | None = None
    # who said it when it was not the contact: "assistant" for the AI's own earlier reply ("" for the contact's)
    role: str = ""
    # a search narrowed to keyed records (key_prefix) also returns each record's key, metadata and times
    key: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SearchHit:
        return cls(
            id=str(data["id"]),
            memory_type=str(data["memory_type"]),
            content=str(data["content"]),
            importance=float(data["importance"]),
            score=float(data["score"]),
            occurred_at=_dt(data.get("occurred_at")),
            is_compressed=bool(data.get("is_compressed", False)),
            outdated=bool(data.get("outdated", False)),
            sources=_strings(data.get("sources")),
            entities=_strings(data.get("entities")),
            explain=_optional_dict(data.get("explain")),
            role=str(data.get("role") or ""),
            key=data.get("key"),
            metadata=_optional_dict(data.get("metadata")),
            created_at=_dt(data.get("created_at")),
            updated_at=_dt(data.get("updated_at")),
        )


@dataclass(frozen=True)
class SearchResults:
    query: str
    results: list[SearchHit]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SearchResults:
        return cls(query=str(data["query"]), results=[SearchHit.from_json(item) for item in data.get("results") or []])


@dataclass(frozen=True)
class ContextMemory:
    id: str
    memory_type: str
    content: str
    importance: float
    score: float
    outdated: bool
    sources: list[str] = field(default_factory=list)
    explain: dict[str, Any] | None = None
    role: str = ""  # "assistant": the AI's own earlier reply, its line reads "[EPISODE] Assistant: …"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContextMemory:
        return cls(
            id=str(data["id"]),
            memory_type=str(data["memory_type"]),
            content=str(data["content"]),
            importance=float(data["importance"]),
            score=float(data["score"]),
            outdated=bool(data.get("outdated", False)),
            sources=_strings(data.get("sources")),
            explain=_optional_dict(data.get("explain")),
            role=str(data.get("role") or ""),
        )


@dataclass(frozen=True)
class Context:
    """What to hand the LLM before it answers the contact: `context_text` holds the `<memory>` block."""

    contact: dict[str, Any]
    state: dict[str, Any] | None
    memories: list[ContextMemory]
    entities: list[dict[str, Any]]
    context_text: str
    memory_budget: int
    tokens_used: int
    crisis: dict[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Context:
        return cls(
            contact=_dict(data.get("contact")),
            state=_optional_dict(data.get("state")),
            memories=[ContextMemory.from_json(item) for item in data.get("memories") or []],
            entities=[_dict(item) for item in data.get("entities") or []],
            context_text=str(data.get("context_text") or ""),
            memory_budget=int(data.get("memory_budget") or 0),
            tokens_used=int(data.get("tokens_used") or 0),
            crisis=_dict(data.get("crisis")),
        )


@dataclass(frozen=True)
class Memory:
    id: str
    contact_id: str | None
    memory_type: str
    content: str
    importance: float
    is_current: bool
    is_pinned: bool
    is_compressed: bool
    slot: str
    sources: list[str]
    entities: list[str]
    metadata: dict[str, Any]
    created_by: str
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime | None = None
    accessed_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    superseded_by: str | None = None
    outdated_by: str | None = None
    access_count: int = 0
    decay_rate: float = 0.0
    key: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Memory:
        return cls(
            id=str(data["id"]),
            contact_id=data.get("contact_id"),
            memory_type=str(data["memory_type"]),
            content=str(data["content"]),
            importance=float(data["importance"]),
            is_current=bool(data.get("is_current", True)),
            is_pinned=bool(data.get("is_pinned", False)),
            is_compressed=bool(data.get("is_compressed", False)),
            slot=str(data.get("slot") or ""),
            sources=_strings(data.get("sources")),
            entities=_strings(data.get("entities")),
            metadata=_dict(data.get("metadata")),
            created_by=str(data.get("created_by") or ""),
            created_at=_required_dt(data["created_at"]),
            updated_at=_required_dt(data["updated_at"]),
            occurred_at=_dt(data.get("occurred_at")),
            accessed_at=_dt(data.get("accessed_at")),
            valid_from=_dt(data.get("valid_from")),
            valid_to=_dt(data.get("valid_to")),
            expires_at=_dt(data.get("expires_at")),
            superseded_by=data.get("superseded_by"),
            outdated_by=data.get("outdated_by"),
            access_count=int(data.get("access_count") or 0),
            decay_rate=float(data.get("decay_rate") or 0.0),
            key=data.get("key"),
        )


@dataclass(frozen=True)
class Revision:
    """One entry of a memory's history: created, reinforced, merged, superseded, edited, deleted, …"""

    action: str
    actor: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    related_memory: str | None
    note: str
    created_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Revision:
        return cls(
            action=str(data["action"]),
            actor=str(data.get("actor") or ""),
            before=_optional_dict(data.get("before")),
            after=_optional_dict(data.get("after")),
            related_memory=data.get("related_memory"),
            note=str(data.get("note") or ""),
            created_at=_required_dt(data["created_at"]),
        )


@dataclass(frozen=True)
class KnowledgeDocument:
    """`status`: `processing` when uploaded (the server's worker chunks and embeds it), then `ready` (searchable)
    or `failed` (`status_message` says why). `knowledge.wait(id)` polls until it is no longer processing."""

    id: str
    title: str
    content_type: str
    size_bytes: int
    chunk_count: int
    created_by: str
    created_at: datetime | None
    status: str = "ready"
    status_message: str = ""
    processed_at: datetime | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KnowledgeDocument:
        return cls(
            id=str(data["id"]),
            title=str(data["title"]),
            content_type=str(data.get("content_type") or ""),
            size_bytes=int(data.get("size_bytes") or 0),
            chunk_count=int(data.get("chunk_count") or 0),
            created_by=str(data.get("created_by") or ""),
            created_at=_dt(data.get("created_at")),
            status=str(data.get("status") or "ready"),
            status_message=str(data.get("status_message") or ""),
            processed_at=_dt(data.get("processed_at")),
        )

    @property
    def is_processing(self) -> bool:
        return self.status == "processing"


@dataclass(frozen=True)
class KnowledgeHit:
    document_id: str
    document_title: str
    position: int
    content: str
    score: float
    token_count: int
    explain: dict[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KnowledgeHit:
        return cls(
            document_id=str(data["document_id"]),
            document_title=str(data.get("document_title") or ""),
            position=int(data.get("position") or 0),
            content=str(data["content"]),
            score=float(data["score"]),
            token_count=int(data.get("token_count") or 0),
            explain=_dict(data.get("explain")),
        )


@dataclass(frozen=True)
class KnowledgeResults:
    query: str
    results: list[KnowledgeHit]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KnowledgeResults:
        return cls(
            query=str(data["query"]), results=[KnowledgeHit.from_json(item) for item in data.get("results") or []]
        )


@dataclass(frozen=True)
class ContactExport:
    """Everything held about one contact (GDPR art. 15), as the server exports it."""

    export_version: int
    contact: dict[str, Any]
    state: dict[str, Any] | None
    profile: dict[str, Any] | None
    memories: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    mood_history: list[dict[str, Any]]
    events: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    raw: dict[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContactExport:
        return cls(
            export_version=int(data.get("export_version") or 0),
            contact=_dict(data.get("contact")),
            state=_optional_dict(data.get("state")),
            profile=_optional_dict(data.get("profile")),
            memories=[_dict(item) for item in data.get("memories") or []],
            entities=[_dict(item) for item in data.get("entities") or []],
            mood_history=[_dict(item) for item in data.get("mood_history") or []],
            events=[_dict(item) for item in data.get("events") or []],
            messages=[_dict(item) for item in data.get("messages") or []],
            raw=dict(data),
        )


@dataclass(frozen=True)
class Health:
    status: str
    database: dict[str, Any]
    redis: dict[str, Any]
    worker: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Health:
        return cls(
            status=str(data.get("status") or ""),
            database=_dict(data.get("database")),
            redis=_dict(data.get("redis")),
            worker=_dict(data.get("worker")),
        )
