from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.core.tokens import count_tokens
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from tests.knowledge.uploads import upload_processed

pytestmark = pytest.mark.django_db

PARAGRAPH = (
    "Our sourdough is fermented for thirty six hours before baking. We use a rye starter called Bertha. "
    "Every loaf is scored by hand and baked on stone. Customers can order online until 8 pm for next-day pickup. "
)


def test_document_is_chunked_embedded_and_listed(api, tenant):
    content = "\n\n".join([PARAGRAPH * 4, "Short note.", PARAGRAPH * 2])
    body = upload_processed(api, {"title": "Bakery FAQ", "content": content})
    assert body["status"] == "ready" and body["status_message"] == "" and body["processed_at"]
    document = KnowledgeDocument.objects.get(pk=body["id"])
    chunks = list(KnowledgeChunk.objects.filter(document=document).order_by("position"))
    assert document.chunk_count == len(chunks) >= 2
    for chunk in chunks:
        assert chunk.token_count == count_tokens(chunk.content)
        assert chunk.token_count <= 300
        assert chunk.embedding is not None
    assert "Short note." in " ".join(chunk.content for chunk in chunks)
    listed = api.get("/api/v1/knowledge/documents").json()
    assert [row["title"] for row in listed["results"]] == ["Bakery FAQ"]


def test_upload_file_and_delete(api, other_api, tenant):
    upload = SimpleUploadedFile("faq.md", (PARAGRAPH * 3).encode(), content_type="text/markdown")
    document_id = upload_processed(api, {"title": "FAQ", "file": upload}, format="multipart")["id"]
    assert KnowledgeChunk.objects.filter(tenant=tenant).exists()
    assert other_api.delete(f"/api/v1/knowledge/documents/{document_id}").status_code == 404
    assert api.delete(f"/api/v1/knowledge/documents/{document_id}").status_code == 204
    assert not KnowledgeChunk.objects.filter(tenant=tenant).exists()


def test_document_over_2_mb_is_413(api, tenant):
    response = api.post(
        "/api/v1/knowledge/documents", {"title": "big", "content": "a" * (2 * 1024 * 1024 + 1)}, format="json"
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert not KnowledgeDocument.objects.filter(tenant=tenant).exists()


def test_an_uploaded_file_over_2_mb_is_413_before_it_is_read(api, tenant):
    """The size is checked before the upload is read into memory: a file over the limit whose bytes are not
    even UTF-8 is refused for its size (reading it first gave a decoding error after loading it all)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("big.md", b"\xff" * (2 * 1024 * 1024 + 1), content_type="text/markdown")
    response = api.post("/api/v1/knowledge/documents", {"title": "big", "file": upload}, format="multipart")
    assert response.status_code == 413, response.content
    assert response.json()["error"]["code"] == "too_large"
    assert not KnowledgeDocument.objects.filter(tenant=tenant).exists()


@pytest.mark.parametrize(
    "payload",
    [
        {"title": "t"},
        {"content": "text"},
        {"title": "t", "content": "   "},
        {"title": "t", "content": "x", "content_type": "application/pdf"},
    ],
    ids=["no-content", "no-title", "blank", "pdf"],
)
def test_bad_document_input_is_400(api, tenant, payload):
    assert api.post("/api/v1/knowledge/documents", payload, format="json").status_code == 400
    assert not KnowledgeDocument.objects.filter(tenant=tenant).exists()
