"""The one boundary check (apps/core/boundary.py): text PostgreSQL cannot store — NUL, unpaired surrogates —
is a 400 naming the field wherever it comes in: query parameters of every endpoint (API and inspector), JSON,
form and multipart fields, uploaded files (decoded by their charset; 415 when nothing decodes them). Every
write endpoint is driven with such strings (Hypothesis) and none answers a 5xx."""

from __future__ import annotations

import io
import json
from typing import Any
from urllib.parse import quote

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.contacts.models import Contact, Trigger
from apps.contacts.services import trigger_create
from apps.core.boundary import storable_check, unstorable_field, uploaded_text
from apps.core.exceptions import ApplicationError
from apps.knowledge.models import KnowledgeDocument
from tests.factories import UserFactory
from tests.inspector.conftest import MembershipFactory, login, seed_contact

pytestmark = pytest.mark.django_db

NUL = "\x00"
POISONS = ["a\x00b", "\ud83d lone", "\udfff", "ok\x00"]

SCHEMA = SchemaGenerator().get_schema(public=True)


def _operations(method: str) -> list[tuple[str, dict[str, Any]]]:
    return [(path, ops[method]) for path, ops in SCHEMA["paths"].items() if method in ops]


def _concrete(path: str, ids: dict[str, str]) -> str:
    for name, value in ids.items():
        path = path.replace("{" + name + "}", value)
    return path


@pytest.fixture
def ids(api, tenant) -> dict[str, str]:
    """One real object behind every path parameter, so each GET reaches its view (not a 404 for the id)."""
    body = {"contact_id": "ann", "conversation_id": "c1", "role": "user", "message": "My dog Bruno is a beagle"}
    event = api.post("/api/v1/ingest", body, format="json").json()
    memory = api.post(
        "/api/v1/memories", {"contact_id": "ann", "content": "Likes tea", "memory_type": "preference"}, format="json"
    ).json()
    document = api.post("/api/v1/knowledge/documents", {"title": "t", "content": "Opening hours."}, format="json")
    trigger = trigger_create(
        contact=Contact.objects.get(tenant=tenant, external_id="ann"),
        kind=Trigger.KINDS[0],
        reason="check in",
        dedupe_key="k",
        earliest=timezone.now(),
    )
    return {
        "contact_id": "ann",
        "conversation_id": "c1",
        "event_id": event["event_id"],
        "memory_id": memory["id"],
        "document_id": document.json()["id"],
        "trigger_id": str(trigger.pk),
    }


def test_unstorable_field_names_the_place():
    assert unstorable_field({"metadata": {"note": "a\x00"}}) == "metadata.note"
    assert unstorable_field({"messages": [{"message": "ok"}, {"message": "\ud83d"}]}) == "messages[1].message"
    assert unstorable_field({"a": ["fine", {"b": "fine"}], "c": 1}) is None
    assert unstorable_field({"k\x00": "v"}, field="metadata") == "metadata.<key>"
    with pytest.raises(ApplicationError) as raised:
        storable_check("x\x00", field="title")
    assert raised.value.status_code == 400 and list(raised.value.details) == ["title"]
    assert raised.value.message.startswith("title must not contain NUL")


def test_every_query_parameter_of_every_api_endpoint_refuses_nul(api, ids):
    checked = 0
    for path, operation in _operations("get"):
        url = _concrete(path, ids)
        declared = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
        for name in [*declared, "search", "limit", "cursor", "undeclared"]:
            response = api.get(f"{url}?{name}={quote(NUL)}")
            assert response.status_code == 400, (url, name, response.content[:200])
            error = response.json()["error"]
            assert error["code"] == "invalid_text" and name in error["message"], (url, name)
            checked += 1
    assert checked > 60  # every GET operation of the schema, each with its parameters
    # the three reports, once more by name
    assert api.get("/api/v1/contacts?search=%00").status_code == 400


def test_a_nul_in_a_parameter_name_is_refused_too(api):
    response = api.get("/api/v1/contacts?a%00b=1")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_text"


INSPECTOR_PAGES = [
    "/inspector/contacts/?q=%00",
    "/inspector/brain/?q=%00",
    "/inspector/brain/search/?q=%00",
    "/inspector/conversations/{conversation}/?message=%00",
    "/inspector/contacts/{contact}/context/?q=%00",
    "/inspector/contacts/?page=%00",
]


def test_every_inspector_page_with_parameters_refuses_nul_with_a_400_page(tenant):
    seeded = seed_contact(tenant)
    client = login(MembershipFactory(tenant=tenant, user=UserFactory(username="olga")).user)
    conversation = seeded.contact.conversations.first()
    for page in INSPECTOR_PAGES:
        url = page.format(conversation=conversation.pk, contact=seeded.contact.pk)
        response = client.get(url)
        assert response.status_code == 400, url
        assert b"must not contain NUL" in response.content and b"Traceback" not in response.content
    # an inspector form posted with a NUL in a field: the same answer, nothing written
    memory = seeded.contact.memories.first()
    response = client.post(f"/inspector/memories/{memory.pk}/correct/", {"content": "new\x00text"})
    assert response.status_code == 400 and b"content" in response.content


def test_multipart_fields_and_files_are_checked_and_decoded(api, tenant):
    def upload(name: str, raw: bytes, charset: str | None = None, **fields: str) -> Any:
        declared = f"text/plain; charset={charset}" if charset else "text/plain"
        file = SimpleUploadedFile(name, raw, content_type=declared)
        return api.post("/api/v1/knowledge/documents", {"title": "t", "file": file, **fields}, format="multipart")

    # the repro: printf 'hello\x00world' > f.txt
    response = upload("f.txt", b"hello\x00world")
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("file ")
    # a field of the form
    response = upload("f.txt", b"hello", title="a\x00b")
    assert response.status_code == 400 and "title" in response.json()["error"]["message"]
    # binary bytes that are text in no charset: 415
    response = upload("f.pdf.txt", bytes(range(256)) * 40)
    assert response.status_code == 415, response.content
    assert not KnowledgeDocument.objects.filter(tenant=tenant).exists()

    # decoded, never stored raw: UTF-16 with its mark, a declared Latin-1, UTF-8
    text = "Crème brûlée is served on Sundays at the café. " * 5
    for raw, charset in [(text.encode("utf-16"), None), (text.encode("latin-1"), "latin-1"), (text.encode(), None)]:
        response = upload("menu.txt", raw, charset)
        assert response.status_code == 202, response.content
        document = KnowledgeDocument.objects.get(pk=response.json()["id"])
        assert "Crème brûlée" in document.content


def test_uploaded_text_detects_utf16_without_its_mark_and_refuses_binary():
    text = "Our opening hours are nine to five, Monday to Saturday. " * 4
    assert uploaded_text(text.encode("utf-16-le")).strip().startswith("Our opening hours")
    with pytest.raises(ApplicationError) as raised:
        uploaded_text(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    assert raised.value.status_code == 415


def test_a_body_over_the_cap_is_refused_before_any_of_it_is_read(client):
    """Content-Length over the cap: 413 and not one byte read (it used to be spooled whole first)."""

    class CountingInput(io.BytesIO):
        read_bytes = 0

        def read(self, size: int | None = -1) -> bytes:
            chunk = super().read(size)
            CountingInput.read_bytes += len(chunk)
            return chunk

        def readline(self, size: int | None = -1) -> bytes:
            line = super().readline(size)
            CountingInput.read_bytes += len(line)
            return line

    body = b"x" * 1024
    response = client.generic(
        "POST",
        "/api/v1/knowledge/documents",
        data=b"",
        content_type="multipart/form-data; boundary=xyz",
        CONTENT_LENGTH=str(20 * 1024 * 1024),
        **{"wsgi.input": CountingInput(body)},
    )
    assert response.status_code == 413
    assert CountingInput.read_bytes == 0


def test_an_upload_under_the_body_cap_but_over_the_document_limit_stops_while_streaming(api, tenant):
    """2.5 MB of file in a 3 MB body: the upload handler stops at 2 MB instead of spooling the whole file."""
    upload = SimpleUploadedFile("big.md", b"a" * (2 * 1024 * 1024 + 512 * 1024), content_type="text/markdown")
    response = api.post("/api/v1/knowledge/documents", {"title": "big", "file": upload}, format="multipart")
    assert response.status_code == 413, response.content
    assert "uploaded file is larger" in response.json()["error"]["message"]
    assert not KnowledgeDocument.objects.filter(tenant=tenant).exists()


# --- every write endpoint, driven with unstorable strings -------------------------------------------------------

# a valid body for each write operation; each string of it in turn is replaced by a generated unstorable one
WRITE_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("post", "/api/v1/brain/context"): {"query": "hours", "conversation_id": "owner", "service_data": {"k": "v"}},
    ("post", "/api/v1/contacts"): {"contact_id": "new-1", "display_name": "Zed", "metadata": {"plan": "gold"}},
    ("patch", "/api/v1/contacts/{contact_id}"): {"display_name": "Ann", "metadata": {"plan": "gold"}},
    ("post", "/api/v1/conversations/{conversation_id}/close"): {},
    ("post", "/api/v1/ingest"): {
        "contact_id": "ann",
        "conversation_id": "c1",
        "role": "user",
        "message": "I live in Pune",
        "message_id": "m-9",
        "display_name": "Ann",
        "channel": "sms",
        "metadata": {"source": "app"},
    },
    ("post", "/api/v1/ingest/batch"): {
        "messages": [{"contact_id": "ann", "conversation_id": "c1", "role": "user", "message": "I like chai"}]
    },
    ("post", "/api/v1/knowledge/documents"): {"title": "FAQ", "content": "We open at nine."},
    ("post", "/api/v1/memories"): {"contact_id": "ann", "content": "Likes tea", "memory_type": "preference"},
    ("patch", "/api/v1/memories/{memory_id}"): {"content": "Likes green tea"},
    ("post", "/api/v1/memories/search"): {"query": "tea", "contact_id": "ann", "memory_types": ["fact"]},
    ("post", "/api/v1/observations"): {
        "contact_id": "ann",
        "category": "fact",
        "content": "Paid on time",
        "source_metadata": {"crm": "x"},
    },
    ("post", "/api/v1/triggers/{trigger_id}/done"): {"status": "done"},
}


def _string_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, str):
        return [path]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _string_paths(item, (*path, key))]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _string_paths(item, (*path, index))]
    return []


def _replaced(value: Any, path: tuple[Any, ...], new: str) -> Any:
    copy = json.loads(json.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


unstorable_strings = st.builds(
    lambda before, poison, after: before + poison + after,
    st.text(max_size=5),
    st.sampled_from([NUL, "\ud800", "\udbff", "\udc00", "\udfff"]) | st.characters(categories=["Cs"]),
    st.text(max_size=5),
)


def test_every_write_endpoint_has_a_body_to_drive():
    writes = {
        (method, path)
        for method in ("post", "put", "patch")
        for path, operation in _operations(method)
        if "requestBody" in operation or method == "post"
    }
    assert writes == set(WRITE_BODIES)  # a new write endpoint needs its body here


def _driver(api: Any, method: str, url: str, body: dict[str, Any], places: list[tuple[Any, ...]]) -> Any:
    @given(place=st.sampled_from(places), poison=unstorable_strings)
    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def drive(place: tuple[Any, ...], poison: str) -> None:
        raw = json.dumps(_replaced(body, place, poison))  # ensure_ascii: \\u0000, \\ud800 escapes
        response = getattr(api, method)(url, raw, content_type="application/json")
        assert response.status_code < 500, (url, place, response.content[:300])
        assert response.status_code == 400, (url, place, response.status_code)
        assert response.json()["error"]["code"] == "invalid_text"

    return drive


@pytest.mark.django_db(transaction=True)
def test_no_write_endpoint_answers_5xx_to_unstorable_strings(api, ids):
    driven = 0
    for (method, template), body in WRITE_BODIES.items():
        places = _string_paths(body)
        if places:
            _driver(api, method, _concrete(template, ids), body, places)()
            driven += 1
    assert driven == len(WRITE_BODIES) - 1  # all but the close, whose body has no string
    assert list(Contact.objects.values_list("external_id", flat=True)) == ["ann"]  # every poisoned write refused
