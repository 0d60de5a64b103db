"""The MCP tools: what each takes (a pydantic model: the JSON schema an LLM reads, and the validation), which
scope of the key it needs, and what it does — one call of the same service or selector the REST view calls,
returning the REST view's body. No ingest, search or context logic lives here.

Everything here runs in the Django thread that holds the request's database connection (bound to the caller's
tenant by row-level security); apps/mcp_server/server.py gets it there."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, field_validator

from apps.contacts.personal_data import contact_export
from apps.contacts.selectors import contact_get
from apps.contacts.services import contact_delete
from apps.context.selectors import contact_with_state_and_profile
from apps.context.services import context_payload
from apps.core.fields import ID_REGEX, NOT_BLANK_REGEX
from apps.core.moments import occurred_at_problem
from apps.memories import scoring
from apps.memories.ingest.services import IngestItem, ingest_messages, ingest_payload
from apps.memories.retrieval.results import search_payload
from apps.memories.selectors import memory_get, memory_list
from apps.memories.serializers import MemoryOutputSerializer
from apps.memories.store.editing import MAX_MEMORY_CHARS, memory_delete, memory_edit
from apps.tenants.models import ApiKey, Tenant

# The limits of the REST API's serializers (docs/api.md), stated again for the tools' JSON schemas; the patterns are
# the serializers' own (apps/core/fields.py): ids are parts of URLs in the REST API (no '/'), texts are not blank.
ID_PATTERN = ID_REGEX
ContactId = Annotated[
    str,
    Field(
        min_length=1, max_length=255, pattern=ID_PATTERN, description="The client's own id of the end-user (contact)."
    ),
]
OptionalContactId = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=255,
        pattern=ID_PATTERN,
        description="The end-user (contact). Omit it for the tenant's own memory (the brain).",
    ),
]
MemoryId = Annotated[
    str, Field(description="A memory's id (a UUID), as add_memory, search_memory or list_memories gave it.")
]
MEMORY_TYPES = Literal["fact", "preference", "episode", "pattern"]
AsOf = Annotated[
    datetime | None,
    Field(
        default=None,
        description="The moment to answer as of (ISO 8601; without an offset, UTC), e.g. an imported history's last "
        "message: what 'last week' or 'on Friday' in the query counts from. Default now.",
    ),
]


def _aware(value: datetime | None) -> datetime | None:
    """A moment without an offset is UTC, as the REST API reads it (TIME_ZONE)."""
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


@dataclass(frozen=True)
class Caller:
    """Who calls a tool: the tenant of the API key (the connection is bound to it) and the key's scopes."""

    tenant: Tenant
    api_key: ApiKey

    @property
    def actor(self) -> str:
        return f"api_key:{self.api_key.prefix}"


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class AddMemory(Arguments):
    message: str = Field(
        min_length=1,
        max_length=settings.ENGRAM["MAX_MESSAGE_CHARS"],
        pattern=NOT_BLANK_REGEX,
        description="One message of the conversation, as said. Engram extracts facts, preferences and the episode.",
    )
    contact_id: OptionalContactId
    conversation_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        pattern=ID_PATTERN,
        description="The conversation it belongs to (default: one conversation per contact for MCP, 'mcp-<contact>').",
    )
    role: Literal["user", "assistant", "system", "tool"] = Field(default="user", description="Who said it.")
    speaker: str = Field(default="", max_length=200, description="The speaker's name, when known.")
    occurred_at: datetime | None = Field(
        default=None, description="When it was said (ISO 8601, 1970 up to a day ahead of now); default now."
    )
    message_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        pattern=NOT_BLANK_REGEX,
        description="Your id of the message: the same id again stores nothing twice (safe retries).",
    )

    @field_validator("occurred_at")
    @classmethod
    def _occurred_at_bounded(cls, value: datetime | None) -> datetime | None:
        if value is not None and (problem := occurred_at_problem(value)):
            raise ValueError(problem)
        return value


class SearchMemory(Arguments):
    query: str = Field(
        min_length=1, max_length=4000, pattern=NOT_BLANK_REGEX, description="What to look for, in natural language."
    )
    contact_id: OptionalContactId
    top_k: int = Field(default=10, ge=1, le=50, description="How many memories to return (1-50).")
    types: list[MEMORY_TYPES] = Field(default_factory=list, description="Only these memory types (default: all).")
    as_of: AsOf

    _as_of_aware = field_validator("as_of")(_aware)


class GetContext(Arguments):
    contact_id: ContactId
    query: str = Field(
        default="", max_length=4000, description="The message you are about to answer: memories relevant to it first."
    )
    token_budget: int | None = Field(
        default=None,
        ge=0,
        le=32000,
        description="Tokens for the memory lines (0-32000); default: the budget of the relationship's stage.",
    )
    as_of: datetime | None = Field(
        default=None,
        description="The moment to assemble the context as of (ISO 8601; without an offset, UTC), e.g. an imported "
        "history's last message: the relationship stage then, and what the query's time expressions and the "
        "stage's recent episodes count from. Default now.",
    )

    _as_of_aware = field_validator("as_of")(_aware)


class ListMemories(Arguments):
    contact_id: OptionalContactId
    types: list[MEMORY_TYPES] = Field(default_factory=list, description="Only these memory types (default: all).")
    query: str = Field(default="", max_length=500, description="Only memories containing these words.")
    limit: int = Field(default=20, ge=1, le=200, description="Page size (1-200).")
    offset: int = Field(default=0, ge=0, description="Rows to skip: the next page starts at offset + limit.")


class UpdateMemory(Arguments):
    memory_id: MemoryId
    content: str | None = Field(
        default=None, min_length=1, max_length=MAX_MEMORY_CHARS, pattern=NOT_BLANK_REGEX, description="New text."
    )
    importance: float | None = Field(default=None, ge=0.0, le=1.0, description="New importance, 0-1.")
    is_pinned: bool | None = Field(default=None, description="Pinned memories never decay.")


class MemoryById(Arguments):
    memory_id: MemoryId


class DeleteMemory(MemoryById):
    hard: bool = Field(
        default=False,
        description="Also delete its history (default: its text is scrubbed at once and the history keeps who "
        "deleted it and when).",
    )


class ContactById(Arguments):
    contact_id: ContactId


class ToolFailure(Exception):
    """A refusal the caller can act on (a bad id, a missing scope): becomes the tool's error result."""


def _contact(caller: Caller, contact_id: str | None) -> Any:
    return contact_get(tenant=caller.tenant, external_id=contact_id) if contact_id else None


def _memory_body(caller: Caller, memory_id: Any) -> dict[str, Any]:
    return dict(MemoryOutputSerializer(memory_get(tenant=caller.tenant, memory_id=memory_id)).data)


def _uuid(memory_id: str) -> str:
    import uuid

    try:
        return str(uuid.UUID(memory_id))
    except ValueError:
        raise ToolFailure(f"memory_id: '{memory_id[:60]}' is not a memory id (a UUID).") from None


def default_conversation(contact_id: str | None) -> str:
    name = f"mcp-{contact_id or 'brain'}"
    return name if len(name) <= 255 else f"mcp-{hashlib.sha256(name.encode()).hexdigest()}"


def add_memory(caller: Caller, args: AddMemory) -> dict[str, Any]:
    item = IngestItem(
        contact_id=args.contact_id,
        conversation_id=args.conversation_id or default_conversation(args.contact_id),
        message=args.message,
        role=args.role,
        message_id=args.message_id,
        speaker=args.speaker,
        occurred_at=args.occurred_at,
    )
    (outcome,) = ingest_messages(tenant=caller.tenant, items=[item], actor=caller.actor)
    return ingest_payload(outcome)


def search_memory(caller: Caller, args: SearchMemory) -> dict[str, Any]:
    return search_payload(
        tenant=caller.tenant,
        contact=_contact(caller, args.contact_id),
        query=args.query,
        top_k=args.top_k,
        memory_types=args.types,
        reference_time=args.as_of,
    )


def get_context(caller: Caller, args: GetContext) -> dict[str, Any]:
    contact = contact_with_state_and_profile(tenant=caller.tenant, external_id=args.contact_id)
    return context_payload(
        tenant=caller.tenant,
        contact=contact,
        query=args.query,
        conversation=None,
        token_budget=args.token_budget,
        explain=False,
        as_of=args.as_of,
    )


def list_memories(caller: Caller, args: ListMemories) -> dict[str, Any]:
    contact = _contact(caller, args.contact_id)
    memories = memory_list(
        tenant=caller.tenant,
        contact=contact,
        tenant_scope_only=contact is None,  # omitted contact: the brain, as search_memory
        memory_types=[scoring.SEED_TYPE_MAP.get(name, name) for name in args.types],
        query=args.query,
    )
    count = memories.count()
    page = list(memories[args.offset : args.offset + args.limit])
    following = args.offset + len(page)
    return {
        "count": count,
        "next_offset": following if following < count else None,
        "results": MemoryOutputSerializer(page, many=True).data,
    }


def update_memory(caller: Caller, args: UpdateMemory) -> dict[str, Any]:
    changes = {
        name: value for name in ("content", "importance", "is_pinned") if (value := getattr(args, name)) is not None
    }
    if not changes:
        raise ToolFailure("Send at least one of content, importance, is_pinned.")
    memory = memory_get(tenant=caller.tenant, memory_id=_uuid(args.memory_id))
    memory_edit(memory=memory, actor=caller.actor, **changes)
    return _memory_body(caller, memory.pk)


def delete_memory(caller: Caller, args: DeleteMemory) -> dict[str, Any]:
    memory = memory_get(tenant=caller.tenant, memory_id=_uuid(args.memory_id), include_deleted=args.hard)
    memory_delete(memory=memory, actor=caller.actor, hard=args.hard)
    return {"id": str(memory.pk), "deleted": True}


def export_contact(caller: Caller, args: ContactById) -> dict[str, Any]:
    return contact_export(tenant=caller.tenant, contact=contact_get(tenant=caller.tenant, external_id=args.contact_id))


def erase_contact(caller: Caller, args: ContactById) -> dict[str, Any]:
    record = contact_delete(contact=contact_get(tenant=caller.tenant, external_id=args.contact_id), actor=caller.actor)
    return {"contact_id": args.contact_id, "erased": True, "erasure_record": str(record.pk)}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[Arguments]
    scope: str  # the API key scope it needs: read or write
    run: Callable[[Caller, Any], dict[str, Any]]
    read_only: bool
    destructive: bool = False


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in [
        Tool(
            "add_memory",
            "Remember one message of a conversation with a contact (or, without contact_id, of the business's own "
            "conversation with its AI). Engram extracts facts, preferences and the episode at once; returns the "
            "memories it created or reinforced and the contact's state.",
            AddMemory,
            ApiKey.SCOPE_WRITE,
            add_memory,
            read_only=False,
        ),
        Tool(
            "search_memory",
            "Find what Engram remembers about a contact (or, without contact_id, the business's own memory), "
            "ranked by relevance: each memory with its score, type, sources and entities.",
            SearchMemory,
            ApiKey.SCOPE_READ,
            search_memory,
            read_only=True,
        ),
        Tool(
            "get_context",
            "Before answering a contact, get what to put in the prompt: context_text holds the contact's mood and "
            "stage hints and a <memory> block fitted to the token budget; memories lists its parts with scores.",
            GetContext,
            ApiKey.SCOPE_READ,
            get_context,
            read_only=True,
        ),
        Tool(
            "list_memories",
            "List stored memories, newest first, a page at a time: of a contact, or without contact_id of the "
            "business's own memory. Returns count, results and next_offset (null on the last page).",
            ListMemories,
            ApiKey.SCOPE_READ,
            list_memories,
            read_only=True,
        ),
        Tool(
            "update_memory",
            "Correct a memory's text, change its importance (0-1) or pin it (pinned memories never decay). The "
            "change is recorded in the memory's history.",
            UpdateMemory,
            ApiKey.SCOPE_WRITE,
            update_memory,
            read_only=False,
        ),
        Tool(
            "delete_memory",
            "Delete one memory: it leaves retrieval at once and its text is scrubbed, the deletion recorded in its "
            "history without the text; hard: the history goes too.",
            DeleteMemory,
            ApiKey.SCOPE_WRITE,
            delete_memory,
            read_only=False,
            destructive=True,
        ),
        Tool(
            "export_contact",
            "Everything Engram holds about one contact (GDPR art. 15): messages, memories with their history, "
            "entities, state, profile and mood history.",
            ContactById,
            ApiKey.SCOPE_READ,
            export_contact,
            read_only=True,
        ),
        Tool(
            "erase_contact",
            "Erase a contact and everything remembered about them (GDPR art. 17). Irreversible; recorded in the "
            "erasure audit log.",
            ContactById,
            ApiKey.SCOPE_WRITE,
            erase_contact,
            read_only=False,
            destructive=True,
        ),
    ]
}
