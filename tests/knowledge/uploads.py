"""Uploads made ready in the test's own process: `document_process` is what the worker's task runs (the path
through a real worker is tests/knowledge/test_document_processing.py)."""

from __future__ import annotations

from typing import Any

from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.services import document_process


def processed(document: KnowledgeDocument) -> KnowledgeDocument:
    return document_process(document=document)


def upload_processed(api: Any, data: dict[str, Any], *, format: str = "json") -> dict[str, Any]:
    """POST /knowledge/documents (202, processing), then processed as the worker would: the ready document."""
    response = api.post("/api/v1/knowledge/documents", data, format=format)
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "processing"
    processed(KnowledgeDocument.objects.get(pk=response.json()["id"]))
    return api.get(response.json()["status_url"]).json()
