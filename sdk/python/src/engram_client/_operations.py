"""Every operation of the API as a `Call`: built here once, sent by `Engram` (sync) and `AsyncEngram` (async)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from engram_client._core import (
    API_PREFIX,
    Call,
    IngestMessage,
    Page,
    context_params,
    ingest_body,
    list_params,
    memory_update_body,
    page_parser,
    path_part,
    search_body,
)
from engram_client.models import (
    Contact,
    ContactExport,
    Context,
    Health,
    IngestResult,
    KnowledgeDocument,
    KnowledgeResults,
    Memory,
    Revision,
    SearchResults,
)


def _none(_: Any) -> None:
    return None


def health() -> Call[Health]:
    return Call("GET", "/healthz", Health.from_json)


def ingest(
    *,
    message: str,
    conversation_id: str,
    contact_id: str | None,
    role: str,
    message_id: str | None,
    speaker: str | None,
    occurred_at: str | datetime | None,
    channel: str | None,
    display_name: str | None,
    metadata: Mapping[str, Any] | None,
) -> Call[IngestResult]:
    fields: dict[str, Any] = {
        "conversation_id": conversation_id,
        "message": message,
        "role": role,
        "contact_id": contact_id,
        "message_id": message_id,
        "speaker": speaker,
        "occurred_at": occurred_at,
        "channel": channel,
        "display_name": display_name,
        "metadata": dict(metadata) if metadata is not None else None,
    }
    body = ingest_body({name: value for name, value in fields.items() if value is not None})
    return Call("POST", f"{API_PREFIX}/ingest", IngestResult.from_json, json=body)  # safe twice: its message_id


def ingest_batch(messages: Sequence[IngestMessage | Mapping[str, Any]]) -> Call[list[IngestResult]]:
    body = {"messages": [ingest_body(message) for message in messages]}

    def parse(answer: Any) -> list[IngestResult]:
        return [IngestResult.from_json(item) for item in answer["results"]]

    return Call("POST", f"{API_PREFIX}/ingest/batch", parse, json=body)


def search(
    query: str,
    *,
    contact_id: str | None,
    top_k: int,
    memory_types: Sequence[str] | None,
    include_compressed: bool,
    explain: bool,
    key_prefix: str | None = None,
    as_of: datetime | str | None = None,
) -> Call[SearchResults]:
    body = search_body(
        query,
        contact_id=contact_id,
        top_k=top_k,
        memory_types=memory_types,
        include_compressed=include_compressed,
        explain=explain,
        key_prefix=key_prefix,
        as_of=as_of,
    )
    return Call("POST", f"{API_PREFIX}/memories/search", SearchResults.from_json, json=body)


def context(
    contact_id: str,
    *,
    query: str,
    conversation_id: str | None,
    token_budget: int | None,
    explain: bool,
    as_of: datetime | str | None = None,
) -> Call[Context]:
    params = context_params(
        query=query, conversation_id=conversation_id, token_budget=token_budget, explain=explain, as_of=as_of
    )
    return Call("GET", f"{API_PREFIX}/context/{path_part(contact_id)}", Context.from_json, params=params)


# --- contacts


def contact_create(
    contact_id: str, *, display_name: str, channel: str, metadata: Mapping[str, Any] | None
) -> Call[Contact]:
    body = {
        "contact_id": contact_id,
        "display_name": display_name,
        "channel": channel,
        "metadata": dict(metadata or {}),
    }
    return Call("POST", f"{API_PREFIX}/contacts", Contact.from_json, json=body, retry_safe=False)


def contact_get(contact_id: str) -> Call[Contact]:
    return Call("GET", f"{API_PREFIX}/contacts/{path_part(contact_id)}", Contact.from_json)


def contact_update(
    contact_id: str, *, display_name: str | None, channel: str | None, metadata: Mapping[str, Any] | None
) -> Call[Contact]:
    fields = {"display_name": display_name, "channel": channel, "metadata": dict(metadata) if metadata else None}
    body = {name: value for name, value in fields.items() if value is not None}
    return Call("PATCH", f"{API_PREFIX}/contacts/{path_part(contact_id)}", Contact.from_json, json=body)


def contact_page(*, search: str, limit: int, offset: int) -> Call[Page[Contact]]:
    params = list_params({"search": search}, limit=limit, offset=offset)
    return Call("GET", f"{API_PREFIX}/contacts", page_parser(Contact.from_json), params=params)


def contact_delete(contact_id: str) -> Call[None]:
    return Call("DELETE", f"{API_PREFIX}/contacts/{path_part(contact_id)}", _none)


def contact_export(contact_id: str) -> Call[ContactExport]:
    return Call("GET", f"{API_PREFIX}/contacts/{path_part(contact_id)}/export", ContactExport.from_json)


# --- memories


def memory_add(
    content: str,
    *,
    memory_type: str,
    contact_id: str | None,
    importance: float | None,
    is_pinned: bool | None,
    key: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Call[Memory]:
    fields = {
        "content": content,
        "memory_type": memory_type,
        "contact_id": contact_id,
        "importance": importance,
        "is_pinned": is_pinned,
        "key": key,
        "metadata": dict(metadata) if metadata is not None else None,
    }
    body = {name: value for name, value in fields.items() if value is not None}
    # with a key the add is an upsert (safe twice); without one a second add would reinforce the first
    return Call("POST", f"{API_PREFIX}/memories", Memory.from_json, json=body, retry_safe=key is not None)


def memory_get(memory_id: str) -> Call[Memory]:
    return Call("GET", f"{API_PREFIX}/memories/{path_part(memory_id)}", Memory.from_json)


def memory_page(filters: Mapping[str, Any], *, limit: int, offset: int) -> Call[Page[Memory]]:
    params = list_params(filters, limit=limit, offset=offset)
    return Call("GET", f"{API_PREFIX}/memories", page_parser(Memory.from_json), params=params)


def memory_update(
    memory_id: str, *, content: str | None, importance: float | None, is_pinned: bool | None
) -> Call[Memory]:
    body = memory_update_body(content=content, importance=importance, is_pinned=is_pinned)
    return Call("PATCH", f"{API_PREFIX}/memories/{path_part(memory_id)}", Memory.from_json, json=body)


def memory_delete(memory_id: str) -> Call[None]:
    return Call("DELETE", f"{API_PREFIX}/memories/{path_part(memory_id)}", _none)


def memory_history(memory_id: str) -> Call[list[Revision]]:
    def parse(answer: Any) -> list[Revision]:
        return [Revision.from_json(item) for item in answer["history"]]

    return Call("GET", f"{API_PREFIX}/memories/{path_part(memory_id)}/history", parse)


# --- knowledge base


def knowledge_upload(
    *, title: str, content: str | None, file: bytes | None, filename: str, content_type: str
) -> Call[KnowledgeDocument]:
    if (content is None) == (file is None):
        raise ValueError("Give exactly one of content (text) or file (bytes).")
    path = f"{API_PREFIX}/knowledge/documents"
    if content is not None:
        body = {"title": title, "content": content, "content_type": content_type}
        return Call("POST", path, KnowledgeDocument.from_json, json=body, retry_safe=False)
    assert file is not None
    return Call(
        "POST",
        path,
        KnowledgeDocument.from_json,
        files={"file": (filename, file, content_type)},
        data={"title": title, "content_type": content_type},
        retry_safe=False,
    )


def knowledge_search(query: str, *, top_k: int) -> Call[KnowledgeResults]:
    return Call(
        "GET", f"{API_PREFIX}/knowledge/search", KnowledgeResults.from_json, params={"query": query, "top_k": top_k}
    )


def knowledge_page(*, limit: int, offset: int) -> Call[Page[KnowledgeDocument]]:
    params = list_params({}, limit=limit, offset=offset)
    return Call("GET", f"{API_PREFIX}/knowledge/documents", page_parser(KnowledgeDocument.from_json), params=params)


def knowledge_get(document_id: str) -> Call[KnowledgeDocument]:
    return Call("GET", f"{API_PREFIX}/knowledge/documents/{path_part(document_id)}", KnowledgeDocument.from_json)


def knowledge_delete(document_id: str) -> Call[None]:
    return Call("DELETE", f"{API_PREFIX}/knowledge/documents/{path_part(document_id)}", _none)
