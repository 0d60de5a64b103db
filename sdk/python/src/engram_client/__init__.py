"""Engram's Python client: `Engram` (sync) and `AsyncEngram` (async) over the REST API, typed results, errors by
kind, retries that honour Retry-After. `engram_client.langgraph.EngramStore` (extra `[langgraph]`) is a LangGraph
store served by Engram."""

from __future__ import annotations

__version__ = "0.1.0"

from engram_client._core import IngestMessage
from engram_client.async_client import AsyncEngram
from engram_client.client import Engram
from engram_client.errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    ConflictError,
    EngramError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ValidationError,
)
from engram_client.models import (
    Contact,
    ContactExport,
    Context,
    ContextMemory,
    Health,
    IngestResult,
    KnowledgeDocument,
    KnowledgeHit,
    KnowledgeResults,
    Memory,
    MemoryChange,
    Revision,
    SearchHit,
    SearchResults,
)

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncEngram",
    "AuthenticationError",
    "ConflictError",
    "Contact",
    "ContactExport",
    "Context",
    "ContextMemory",
    "Engram",
    "EngramError",
    "Health",
    "IngestMessage",
    "IngestResult",
    "KnowledgeDocument",
    "KnowledgeHit",
    "KnowledgeResults",
    "Memory",
    "MemoryChange",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "Revision",
    "SearchHit",
    "SearchResults",
    "ServerError",
    "ValidationError",
    "__version__",
]
