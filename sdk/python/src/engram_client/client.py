"""`Engram`: the synchronous client."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx

from engram_client import _operations as ops
from engram_client._core import (
    Call,
    IngestMessage,
    Page,
    RetryPolicy,
    error_from,
    headers_for,
    read_body,
    refused_before_work,
    resolve_settings,
    retry_after_seconds,
)
from engram_client.errors import APIConnectionError, APITimeoutError
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

T = TypeVar("T")
Revisions = list[Revision]  # `list` is a method name below


class Engram:
    """A client of one Engram server with one API key. No global state: make as many as you need.

    >>> engram = Engram("http://127.0.0.1:8000", api_key="eng_…")
    >>> engram.ingest("My dog Bruno is a beagle", contact_id="arjun", conversation_id="chat-1")
    >>> engram.context("arjun", query="how is the dog?").context_text

    `timeout` (seconds, or an `httpx.Timeout`) bounds each attempt; `max_retries` attempts more are made on 429
    and 503 (after Retry-After) and on connection errors; `http_client` lets you bring your own `httpx.Client`
    (proxies, event hooks, transports) — its base URL and auth headers are set per request.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.base_url, api_key = resolve_settings(base_url, api_key)
        self.retry = RetryPolicy(max_retries=max_retries, max_retry_wait=max_retry_wait)
        self._headers = headers_for(api_key)
        self._owns_client = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)
        self._timeout = timeout
        self.contacts = Contacts(self)
        self.memories = Memories(self)
        self.knowledge = Knowledge(self)

    # --- plumbing

    def close(self) -> None:
        if self._owns_client:
            self._http.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method,
                    self.base_url + call.path,
                    params=call.params,
                    json=call.json,
                    files=call.files,
                    data=call.data,
                    headers=self._headers,
                    timeout=self._timeout,
                )
            except httpx.TransportError as exc:
                delay = self.retry.delay_after_error(attempt, exc, call.retry_safe)
                if delay is None:
                    kind = APITimeoutError if isinstance(exc, httpx.TimeoutException) else APIConnectionError
                    raise kind(f"{call.method} {call.path}: {exc}") from exc
            else:
                if response.status_code < 400:
                    return call.parse(read_body(response))
                delay = self.retry.delay_after_status(
                    attempt,
                    response.status_code,
                    retry_after_seconds(response),
                    call.retry_safe or refused_before_work(response),
                )
                if delay is None:
                    raise error_from(response)
            time.sleep(delay)
            attempt += 1

    def _pages(self, page: Callable[[int, int], Call[Page[T]]], page_size: int) -> Iterator[T]:
        offset = 0
        while True:
            current = self._send(page(page_size, offset))
            yield from current.results
            if not current.has_next or not current.results:
                return
            offset += len(current.results)

    # --- the API

    def health(self) -> Health:
        return self._send(ops.health())

    def ingest(
        self,
        message: str,
        *,
        conversation_id: str,
        contact_id: str | None = None,
        role: str = "user",
        message_id: str | None = None,
        speaker: str | None = None,
        occurred_at: str | datetime | None = None,
        channel: str | None = None,
        display_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> IngestResult:
        """Remember one message. Without `contact_id` it is the tenant's own conversation (the brain). A
        `message_id` is generated when none is given, so the retries of this call never store it twice."""
        return self._send(
            ops.ingest(
                message=message,
                conversation_id=conversation_id,
                contact_id=contact_id,
                role=role,
                message_id=message_id,
                speaker=speaker,
                occurred_at=occurred_at,
                channel=channel,
                display_name=display_name,
                metadata=metadata,
            )
        )

    def ingest_batch(self, messages: Sequence[IngestMessage | Mapping[str, Any]]) -> list[IngestResult]:
        """Up to 500 messages in one request, applied in order; all or nothing on a bad item or a conflict."""
        return self._send(ops.ingest_batch(messages))

    def search(
        self,
        query: str,
        *,
        contact_id: str | None = None,
        top_k: int = 10,
        memory_types: Sequence[str] | None = None,
        include_compressed: bool = False,
        explain: bool = False,
        key_prefix: str | None = None,
        as_of: datetime | str | None = None,
    ) -> SearchResults:
        """Ranked memories of a contact (or of the brain without `contact_id`), each with its score.
        `key_prefix`: only the keyed records (`memories.put`) whose key starts with it. `as_of`: the moment
        the query's time expressions ("last week") count from; default now."""
        return self._send(
            ops.search(
                query,
                contact_id=contact_id,
                top_k=top_k,
                memory_types=memory_types,
                include_compressed=include_compressed,
                explain=explain,
                key_prefix=key_prefix,
                as_of=as_of,
            )
        )

    def context(
        self,
        contact_id: str,
        *,
        query: str = "",
        conversation_id: str | None = None,
        token_budget: int | None = None,
        explain: bool = False,
        as_of: datetime | str | None = None,
    ) -> Context:
        """What to hand the LLM before it answers: `context_text` holds the `<memory>` block. `as_of`: as of
        that moment (an imported history asked about as of its last message): the stage it was in then."""
        return self._send(
            ops.context(
                contact_id,
                query=query,
                conversation_id=conversation_id,
                token_budget=token_budget,
                explain=explain,
                as_of=as_of,
            )
        )


class Contacts:
    def __init__(self, client: Engram) -> None:
        self._client = client

    def create(
        self, contact_id: str, *, display_name: str = "", channel: str = "", metadata: Mapping[str, Any] | None = None
    ) -> Contact:
        return self._client._send(
            ops.contact_create(contact_id, display_name=display_name, channel=channel, metadata=metadata)
        )

    def get(self, contact_id: str) -> Contact:
        return self._client._send(ops.contact_get(contact_id))

    def update(
        self,
        contact_id: str,
        *,
        display_name: str | None = None,
        channel: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Contact:
        return self._client._send(
            ops.contact_update(contact_id, display_name=display_name, channel=channel, metadata=metadata)
        )

    def list(self, *, search: str = "", page_size: int = 50) -> Iterator[Contact]:
        """Every contact (matching `search`), fetched `page_size` at a time as you iterate."""
        return self._client._pages(
            lambda limit, offset: ops.contact_page(search=search, limit=limit, offset=offset), page_size
        )

    def delete(self, contact_id: str) -> None:
        """Erase the contact and everything remembered about them (GDPR art. 17; recorded in the audit log)."""
        self._client._send(ops.contact_delete(contact_id))

    def export(self, contact_id: str) -> ContactExport:
        """Everything held about the contact (GDPR art. 15)."""
        return self._client._send(ops.contact_export(contact_id))


class Memories:
    def __init__(self, client: Engram) -> None:
        self._client = client

    def add(
        self,
        content: str,
        *,
        memory_type: str = "fact",
        contact_id: str | None = None,
        importance: float | None = None,
        is_pinned: bool = False,
    ) -> Memory:
        """Store a statement as it is (no extraction); a duplicate reinforces the memory it repeats."""
        return self._client._send(
            ops.memory_add(
                content, memory_type=memory_type, contact_id=contact_id, importance=importance, is_pinned=is_pinned
            )
        )

    def put(
        self,
        key: str,
        content: str,
        *,
        contact_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        memory_type: str = "fact",
        importance: float | None = None,
        is_pinned: bool | None = None,
    ) -> Memory:
        """Store a record under `key` in its scope (the contact's, or the brain's): created, or edited in place
        when the key holds one (its importance and pin kept unless given). Stored as given: never merged with
        another memory. Safe to retry."""
        return self._client._send(
            ops.memory_add(
                content,
                memory_type=memory_type,
                contact_id=contact_id,
                importance=importance,
                is_pinned=is_pinned,
                key=key,
                metadata=metadata if metadata is not None else {},
            )
        )

    def get(self, memory_id: str) -> Memory:
        return self._client._send(ops.memory_get(memory_id))

    def list(
        self,
        *,
        contact_id: str | None = None,
        scope: str = "all",
        types: Sequence[str] | None = None,
        entity: str = "",
        q: str = "",
        include_superseded: bool = False,
        include_compressed: bool = False,
        key: str = "",
        key_prefix: str | None = None,
        page_size: int = 50,
    ) -> Iterator[Memory]:
        """Memories, newest first, fetched `page_size` at a time as you iterate. `scope`: all, tenant (the
        brain), contact (every contact's). `key`: the record with that key; `key_prefix` (even ""): only keyed
        records whose key starts with it."""
        filters = {
            "contact_id": contact_id,
            "scope": None if scope == "all" else scope,
            "type": list(types) if types else None,
            "entity": entity,
            "q": q,
            "include_superseded": include_superseded,
            "include_compressed": include_compressed,
            "key": key,
            "key_prefix": key_prefix,
        }
        return self._client._pages(
            lambda limit, offset: ops.memory_page(filters, limit=limit, offset=offset), page_size
        )

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        is_pinned: bool | None = None,
    ) -> Memory:
        return self._client._send(
            ops.memory_update(memory_id, content=content, importance=importance, is_pinned=is_pinned)
        )

    def delete(self, memory_id: str) -> None:
        self._client._send(ops.memory_delete(memory_id))

    def history(self, memory_id: str) -> Revisions:
        return self._client._send(ops.memory_history(memory_id))


class Knowledge:
    def __init__(self, client: Engram) -> None:
        self._client = client

    def upload(
        self,
        title: str,
        *,
        content: str | None = None,
        file: bytes | None = None,
        filename: str = "document.md",
        content_type: str = "text/markdown",
    ) -> KnowledgeDocument:
        """Add a document to the tenant's knowledge base: its text (`content`) or a file's bytes (`file`). The
        server answers at once with the document `processing`; its worker chunks and embeds it, and search finds
        it once it is `ready`: `wait(document.id)` polls until then."""
        return self._client._send(
            ops.knowledge_upload(title=title, content=content, file=file, filename=filename, content_type=content_type)
        )

    def search(self, query: str, *, top_k: int = 5) -> KnowledgeResults:
        return self._client._send(ops.knowledge_search(query, top_k=top_k))

    def list(self, *, page_size: int = 50) -> Iterator[KnowledgeDocument]:
        return self._client._pages(lambda limit, offset: ops.knowledge_page(limit=limit, offset=offset), page_size)

    def get(self, document_id: str) -> KnowledgeDocument:
        return self._client._send(ops.knowledge_get(document_id))

    def wait(self, document_id: str, *, timeout: float = 300.0, interval: float = 1.0) -> KnowledgeDocument:
        """Poll the document until it is no longer `processing`; the document, `ready` or `failed` (its
        `status_message` says why). Raises TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            document = self.get(document_id)
            if not document.is_processing:
                return document
            if time.monotonic() >= deadline:
                raise TimeoutError(f"document {document_id} still processing after {timeout} s")
            time.sleep(interval)

    def delete(self, document_id: str) -> None:
        self._client._send(ops.knowledge_delete(document_id))
