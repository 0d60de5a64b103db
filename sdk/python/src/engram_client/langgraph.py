"""`EngramStore`: a LangGraph `BaseStore` served by Engram (install `engram-client[langgraph]`).

A namespace names a contact and a kind: the label at `contact_at` (default the first) is the Engram contact
(created on the first put), the other labels are the kind. Each item is one keyed Engram memory in that
contact's scope: its key encodes the kind and the item key (`lg:<kind labels>..<key>`, unambiguous since labels
cannot hold "."), its metadata holds the namespace and the value exactly as put, its content is the text
Engram indexes (the `index` fields, the store's `index_fields`, a value's lone text field, else the value as
JSON). So `search(prefix, query=…)` is Engram's retrieval (vector, keywords, entities) narrowed to the
namespace prefix, and everything else stays visible to the rest of Engram (the inspector, GET /memories).
Items are pinned facts by default: they do not decay. `brain_label`: a contact label that means the tenant's
own memory. TTLs are not supported (`supports_ttl` is False).

    store = EngramStore(Engram(url, api_key=key))
    store.put(("user-1", "preferences"), "food", {"text": "Likes spicy ramen"})
    store.search(("user-1",), query="what does she like to eat?")
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from engram_client import _operations as ops
from engram_client._core import Call, Page
from engram_client.async_client import AsyncEngram
from engram_client.client import Engram
from engram_client.errors import APIStatusError, ConflictError, NotFoundError
from engram_client.models import Memory, SearchResults

KEY_PREFIX = "lg:"
MAX_KEY_CHARS = 255
MAX_CONTENT_CHARS = 4000
SEARCH_CANDIDATES = 50  # Engram returns at most 50 per search

Plan = Generator[Call[Any], Any, Any]


class EngramStore(BaseStore):
    supports_ttl = False

    def __init__(
        self,
        client: Engram | None = None,
        *,
        async_client: AsyncEngram | None = None,
        contact_at: int = 0,
        brain_label: str | None = None,
        index_fields: list[str] | None = None,
        memory_type: str = "fact",
        pinned: bool = True,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("Give an Engram client, an AsyncEngram client, or both.")
        self.client = client
        self.async_client = async_client
        self.contact_at = contact_at
        self.brain_label = brain_label
        self.index_fields = index_fields
        self.memory_type = memory_type
        self.pinned = pinned

    # --- BaseStore

    def batch(self, ops_: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise RuntimeError("EngramStore was made with an AsyncEngram only: use the async methods (aget, …).")
        return [self._drive(self._plan(op)) for op in ops_]

    async def abatch(self, ops_: Iterable[Op]) -> list[Result]:
        if self.async_client is None:
            raise RuntimeError("EngramStore was made with an Engram client only: use the sync methods (get, …).")
        return [await self._adrive(self._plan(op)) for op in ops_]

    # --- drivers: a plan yields the calls it needs and receives their answers (or their errors)

    def _drive(self, plan: Plan) -> Any:
        assert self.client is not None
        try:
            call = next(plan)
            while True:
                try:
                    answer = self.client._send(call)
                except APIStatusError as error:
                    call = plan.throw(error)
                else:
                    call = plan.send(answer)
        except StopIteration as done:
            return done.value

    async def _adrive(self, plan: Plan) -> Any:
        assert self.async_client is not None
        try:
            call = next(plan)
            while True:
                try:
                    answer = await self.async_client._send(call)
                except APIStatusError as error:
                    call = plan.throw(error)
                else:
                    call = plan.send(answer)
        except StopIteration as done:
            return done.value

    def _plan(self, op: Op) -> Plan:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            if op.value is None:
                return self._delete(op.namespace, op.key)
            return self._put(op.namespace, op.key, op.value, op.index)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"Unknown operation {op!r}")

    # --- the mapping

    def _contact(self, namespace: tuple[str, ...]) -> str | None:
        label = namespace[self.contact_at]
        if self.brain_label is not None and label == self.brain_label:
            return None
        if "/" in label:
            raise ValueError(f"The contact label {label!r} cannot hold '/' (an Engram contact id).")
        return label

    def _kind(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        return namespace[: self.contact_at] + namespace[self.contact_at + 1 :]

    def _record_key(self, namespace: tuple[str, ...], key: str) -> str:
        if len(namespace) <= self.contact_at:
            raise ValueError(f"The namespace {namespace} has no label at position {self.contact_at} (the contact).")
        record = KEY_PREFIX + "".join(f"{label}." for label in self._kind(namespace)) + "." + key
        if len(record) > MAX_KEY_CHARS:
            raise ValueError(f"Namespace and key are too long for Engram ({len(record)} > {MAX_KEY_CHARS} characters).")
        return record

    def _text(self, key: str, value: Mapping[str, Any], index: list[str] | bool | None) -> str:
        if index is False:
            return key
        fields = index if isinstance(index, list) else self.index_fields
        if fields:
            parts = [_text_of(_path(value, field)) for field in fields]
            text = "\n".join(part for part in parts if part)
        else:
            strings = [item for item in value.values() if isinstance(item, str)]
            text = strings[0] if len(strings) == 1 and len(value) == 1 else _text_of(value)
        return (text.strip() or key)[:MAX_CONTENT_CHARS]

    def _item(self, memory: Memory) -> Item | None:
        record = memory.metadata.get("langgraph")
        if not isinstance(record, dict):
            return None
        return Item(
            value=record["value"],
            key=record["key"],
            namespace=tuple(record["namespace"]),
            created_at=memory.created_at,
            updated_at=memory.updated_at,
        )

    def _filters(self, contact: str | None) -> dict[str, Any]:
        return {"contact_id": contact, "scope": "tenant" if contact is None else None}

    # --- the plans

    def _find(self, namespace: tuple[str, ...], key: str) -> Generator[Call[Any], Any, Memory | None]:
        contact = self._contact(namespace)
        filters = {**self._filters(contact), "key": self._record_key(namespace, key)}
        try:
            page: Page[Memory] = yield ops.memory_page(filters, limit=1, offset=0)
        except NotFoundError:  # the contact does not exist (yet)
            return None
        return page.results[0] if page.results else None

    def _get(self, namespace: tuple[str, ...], key: str) -> Plan:
        memory = yield from self._find(namespace, key)
        return self._item(memory) if memory is not None else None

    def _put(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: list[str] | bool | None
    ) -> Plan:
        contact = self._contact(namespace)
        call = ops.memory_add(
            self._text(key, value, index),
            memory_type=self.memory_type,
            contact_id=contact,
            importance=None,
            is_pinned=self.pinned,
            key=self._record_key(namespace, key),
            metadata={"langgraph": {"namespace": list(namespace), "key": key, "value": dict(value)}},
        )
        try:
            yield call
        except NotFoundError:
            if contact is None:
                raise
            with suppress(ConflictError):  # made meanwhile
                yield ops.contact_create(contact, display_name="", channel="langgraph", metadata=None)
            yield call
        return None

    def _delete(self, namespace: tuple[str, ...], key: str) -> Plan:
        memory = yield from self._find(namespace, key)
        if memory is not None:
            with suppress(NotFoundError):  # deleted meanwhile
                yield ops.memory_delete(memory.id)
        return None

    def _records(self, prefix: tuple[str, ...]) -> Generator[Call[Any], Any, list[Memory]]:
        """Every store record under the namespace prefix, newest first."""
        if len(prefix) > self.contact_at:
            contact = self._contact(prefix)
            filters = {**self._filters(contact), "key_prefix": self._kind_prefix(prefix)}
        else:  # the prefix stops before the contact: every contact's (and the brain's)
            filters = {"key_prefix": KEY_PREFIX}
        memories: list[Memory] = []
        offset = 0
        while True:
            try:
                page: Page[Memory] = yield ops.memory_page(filters, limit=200, offset=offset)
            except NotFoundError:
                return []
            memories.extend(page.results)
            if not page.has_next or not page.results:
                return memories
            offset += len(page.results)

    def _kind_prefix(self, prefix: tuple[str, ...]) -> str:
        return KEY_PREFIX + "".join(f"{label}." for label in self._kind(prefix))

    def _search(self, op: SearchOp) -> Plan:
        prefix = tuple(op.namespace_prefix)
        if op.query:
            if len(prefix) <= self.contact_at:
                raise ValueError(
                    "A search with a query needs a namespace prefix that names the contact (Engram searches one "
                    f"contact's memory at a time): label {self.contact_at} of {prefix}."
                )
            try:
                found: SearchResults = yield ops.search(
                    op.query,
                    contact_id=self._contact(prefix),
                    top_k=SEARCH_CANDIDATES,
                    memory_types=None,
                    include_compressed=False,
                    explain=False,
                    key_prefix=self._kind_prefix(prefix),
                )
            except NotFoundError:
                return []
            hits = []
            for hit in found.results:
                record = (hit.metadata or {}).get("langgraph")
                if not isinstance(record, dict) or not _matches(record["value"], op.filter):
                    continue
                namespace = tuple(record["namespace"])
                if namespace[: len(prefix)] != prefix:
                    continue
                hits.append(
                    SearchItem(
                        namespace=namespace,
                        key=record["key"],
                        value=record["value"],
                        created_at=hit.created_at or _now(),
                        updated_at=hit.updated_at or _now(),
                        score=hit.score,
                    )
                )
            return hits[op.offset : op.offset + op.limit]
        memories = yield from self._records(prefix)
        items = []
        for memory in memories:
            item = self._item(memory)
            if item is None or item.namespace[: len(prefix)] != prefix or not _matches(item.value, op.filter):
                continue
            items.append(
                SearchItem(
                    namespace=item.namespace,
                    key=item.key,
                    value=item.value,
                    created_at=item.created_at,
                    updated_at=item.updated_at,
                )
            )
        return items[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan:
        memories = yield from self._records(())
        namespaces: set[tuple[str, ...]] = set()
        for memory in memories:
            item = self._item(memory)
            if item is None or not all(
                _condition(item.namespace, condition) for condition in op.match_conditions or ()
            ):
                continue
            namespaces.add(item.namespace[: op.max_depth] if op.max_depth is not None else item.namespace)
        return sorted(namespaces)[op.offset : op.offset + op.limit]


def _now() -> datetime:
    return datetime.now(UTC)


def _path(value: Mapping[str, Any], path: str) -> Any:
    current: Any = value
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda left, right: left == right,
    "$ne": lambda left, right: left != right,
    "$gt": lambda left, right: left is not None and left > right,
    "$gte": lambda left, right: left is not None and left >= right,
    "$lt": lambda left, right: left is not None and left < right,
    "$lte": lambda left, right: left is not None and left <= right,
}


def _matches(value: Mapping[str, Any], conditions: dict[str, Any] | None) -> bool:
    """LangGraph's filter: each key's value equal, or each operator ($eq, $ne, $gt, $gte, $lt, $lte) true."""
    for field, expected in (conditions or {}).items():
        actual = _path(value, field)
        if isinstance(expected, dict) and expected and all(name in _OPERATORS for name in expected):
            if not all(_OPERATORS[name](actual, operand) for name, operand in expected.items()):
                return False
        elif actual != expected:
            return False
    return True


def _condition(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(wanted == "*" or wanted == label for wanted, label in zip(path, part, strict=True))
