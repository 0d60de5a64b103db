"""The typed SDK (sdk/python, `engram_client`) against the live stack: every method, pagination over several
pages, a 429 retried after its Retry-After, a repeated message_id stored once, errors by kind, and the async
client giving what the sync one gives."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import httpx
import pytest
from engram_client import (
    APIConnectionError,
    AsyncEngram,
    AuthenticationError,
    ConflictError,
    Engram,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ValidationError,
)
from engram_client import _operations as ops

from apps.memories.models import Memory
from apps.tenants.models import ApiKey
from tests.agents.conftest import recalls_the_dog
from tests.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def engram(live_url, live_key):
    with Engram(live_url, api_key=live_key) as client:
        yield client


def _recording_client(seen: list[tuple[float, int]]) -> httpx.Client:
    def record(response: httpx.Response) -> None:
        seen.append((time.monotonic(), response.status_code))

    return httpx.Client(timeout=30, event_hooks={"response": [record]})


def test_every_method_against_the_live_server(engram, live_tenant):
    health = engram.health()  # (each test flushes Redis, the worker's heartbeat with it: 'degraded')
    assert health.database["ok"] and health.redis["ok"] and health.status in ("ok", "degraded")

    contact = engram.contacts.create("wa:+91 98", display_name="Arjun", channel="whatsapp", metadata={"plan": "pro"})
    assert (contact.contact_id, contact.display_name, contact.metadata) == ("wa:+91 98", "Arjun", {"plan": "pro"})
    assert engram.contacts.get("wa:+91 98") == contact
    assert engram.contacts.update("wa:+91 98", display_name="Arjun K").display_name == "Arjun K"
    assert [item.contact_id for item in engram.contacts.list(search="arjun")] == ["wa:+91 98"]

    ingested = engram.ingest(
        "My dog Bruno is a beagle and I work at Infosys", contact_id="wa:+91 98", conversation_id="c1"
    )
    assert ingested.duplicate is False and ingested.message_id.startswith("sdk-")
    contents = {change.content for change in ingested.memories}
    assert {"Has a dog named Bruno", "Works at Infosys"} <= contents
    batch = engram.ingest_batch(
        [
            {"contact_id": "wa:+91 98", "conversation_id": "c1", "message": "I live in Pune"},
            {"contact_id": "wa:+91 98", "conversation_id": "c1", "message": "Noted!", "role": "assistant"},
        ]
    )
    assert [result.duplicate for result in batch] == [False, False]
    assert [result.extraction for result in batch] == ["done", "done"]
    assert "Lives in Pune" in {change.content for change in batch[0].memories}

    found = engram.search("what is the dog called?", contact_id="wa:+91 98", top_k=3)
    hit = next(hit for hit in found.results if hit.content == "Has a dog named Bruno")
    assert hit.score > 0 and "pet:bruno" in hit.entities and hit.role == ""
    engram.ingest(
        "A puzzle feeder would keep Bruno busy while you work.",
        contact_id="wa:+91 98",
        conversation_id="c1",
        role="assistant",
    )
    advice = engram.search("puzzle feeder for Bruno", contact_id="wa:+91 98", top_k=3).results[0]
    assert (advice.content, advice.role) == ("A puzzle feeder would keep Bruno busy while you work.", "assistant")
    assert [item.score for item in found.results] == sorted((item.score for item in found.results), reverse=True)
    context = engram.context("wa:+91 98", query="how is Bruno?", token_budget=500)
    assert recalls_the_dog(context.context_text)
    reply = next(memory for memory in context.memories if memory.content.startswith("A puzzle feeder"))
    assert reply.role == "assistant" and f"[EPISODE] Assistant: {reply.content}" in context.context_text
    assert any(recalls_the_dog(f"<memory>\n{memory.content}\n</memory>") for memory in context.memories)

    dog = next(
        memory for memory in engram.memories.list(contact_id="wa:+91 98") if memory.content == "Has a dog named Bruno"
    )
    assert engram.memories.get(dog.id).content == dog.content
    edited = engram.memories.update(dog.id, content="Has a beagle named Bruno", is_pinned=True)
    assert (edited.content, edited.is_pinned) == ("Has a beagle named Bruno", True)
    assert [revision.action for revision in engram.memories.history(dog.id)] == ["created", "edited", "pinned"]
    engram.memories.delete(dog.id)
    with pytest.raises(NotFoundError):
        engram.memories.get(dog.id)
    brain = engram.memories.add("We sell sourdough in Mumbai", memory_type="fact")
    assert brain.contact_id is None
    assert [memory.id for memory in engram.memories.list(scope="tenant")] == [brain.id]
    assert engram.search("what do we sell?").results[0].id == brain.id  # no contact_id: the brain

    document = engram.knowledge.upload("Opening hours", content="We open at 9 am and close at 6 pm on weekdays.")
    uploaded = engram.knowledge.upload(
        "Returns", file=b"Returns are accepted within 30 days.", filename="r.txt", content_type="text/plain"
    )
    assert {item.id for item in engram.knowledge.list()} == {document.id, uploaded.id}
    assert document.status == "processing" and document.chunk_count == 0  # accepted; the worker embeds it
    ready = engram.knowledge.wait(document.id, timeout=120, interval=0.2)
    assert (ready.status, ready.status_message) == ("ready", "") and ready.chunk_count == 1 and ready.processed_at
    assert engram.knowledge.wait(uploaded.id, timeout=120, interval=0.2).status == "ready"
    assert engram.knowledge.get(document.id) == ready
    assert engram.knowledge.search("when do you open?").results[0].document_id == document.id
    engram.knowledge.delete(uploaded.id)
    assert [item.id for item in engram.knowledge.list()] == [document.id]

    exported = engram.contacts.export("wa:+91 98")
    assert exported.contact["contact_id"] == "wa:+91 98"
    assert {message["content"] for message in exported.messages} >= {"I live in Pune"}
    engram.contacts.delete("wa:+91 98")
    with pytest.raises(NotFoundError):
        engram.contacts.get("wa:+91 98")
    assert not Memory.objects.filter(tenant=live_tenant, contact__isnull=False).exists()


def test_lists_iterate_over_every_page(live_url, live_key):
    seen: list[tuple[float, int]] = []
    with Engram(live_url, api_key=live_key, http_client=_recording_client(seen)) as engram:
        for number in range(7):
            engram.contacts.create(f"contact-{number}")
        seen.clear()
        listed = [contact.contact_id for contact in engram.contacts.list(page_size=3)]
    assert sorted(listed) == [f"contact-{number}" for number in range(7)]
    assert len(listed) == len(set(listed))  # no row twice across pages
    assert len(seen) == 3  # 3 + 3 + 1


def test_a_429_is_retried_after_its_retry_after(live_url, live_key, live_tenant):
    window = 4
    live_tenant.settings = {"rate_limit": {"requests": 2, "window_seconds": window}}
    live_tenant.save(update_fields=["settings"])
    seen: list[tuple[float, int]] = []
    # the limiter counts in windows aligned to the clock (apps/tenants/throttling.py): start just after a window
    # opens, so the three requests share it however slow a loaded machine answers (started anywhere, the third
    # could fall into the next window and never be refused)
    time.sleep(window - time.time() % window + 0.05)
    with Engram(live_url, api_key=live_key, http_client=_recording_client(seen)) as engram:
        answers = [engram.contacts.create(f"c{number}").contact_id for number in range(3)]
    assert answers == ["c0", "c1", "c2"]  # the third was refused once, then made after the window
    statuses = [status for _, status in seen]
    assert 429 in statuses and statuses[-1] == 201
    refused_at = next(at for at, status in seen if status == 429)
    assert seen[-1][0] - refused_at >= 0.5  # it waited (Retry-After is 1-4 s here), it did not hammer
    assert statuses.count(429) <= 2


def test_a_429_past_the_retries_is_a_rate_limit_error_with_retry_after(live_url, live_key, live_tenant):
    live_tenant.settings = {"rate_limit": {"requests": 1, "window_seconds": 60}}
    live_tenant.save(update_fields=["settings"])
    with Engram(live_url, api_key=live_key, max_retries=0) as engram:
        engram.contacts.create("first")
        with pytest.raises(RateLimitError) as refused:
            engram.contacts.get("first")
    assert refused.value.status_code == 429 and 0 < (refused.value.retry_after or 0) <= 60


def test_a_repeated_message_id_stores_nothing_twice(engram, live_tenant):
    first = engram.ingest("I have a cat named Luna", contact_id="u1", conversation_id="c", message_id="m-1")
    stored = Memory.objects.filter(tenant=live_tenant).count()
    again = engram.ingest("I have a cat named Luna", contact_id="u1", conversation_id="c", message_id="m-1")
    assert (first.duplicate, again.duplicate) == (False, True)
    assert again.event_id == first.event_id
    assert Memory.objects.filter(tenant=live_tenant).count() == stored
    # the id the SDK generates makes its own retry safe: the same call sent twice is one message
    call = ops.ingest(
        message="I work at Infosys",
        conversation_id="c",
        contact_id="u1",
        role="user",
        message_id=None,
        speaker=None,
        occurred_at=None,
        channel=None,
        display_name=None,
        metadata=None,
    )
    stored = Memory.objects.filter(tenant=live_tenant).count()
    once, twice = engram._send(call), engram._send(call)
    assert once.message_id == twice.message_id and twice.duplicate is True
    assert Memory.objects.filter(tenant=live_tenant).count() == stored + len(once.memories)


def test_search_and_context_are_asked_as_of_a_moment(engram, live_tenant):
    """`as_of` reaches the server from both reads: "last week" counts from it, and a bad one is a ValidationError
    naming the field."""
    fair_day = datetime(2023, 5, 5, 12, tzinfo=UTC)
    engram.ingest("I went to the pottery fair with my aunt", conversation_id="c", contact_id="u3", occurred_at=fair_day)
    asked = {"contact_id": "u3", "explain": True}

    def the_fair(found):
        return next(hit for hit in found.results if "pottery" in hit.content)

    then = engram.search("what did I do last week?", as_of=datetime(2023, 5, 8, tzinfo=UTC), **asked)
    assert the_fair(then).explain["time_window"] is not None  # inside the week before 8 May 2023
    assert the_fair(engram.search("what did I do last week?", **asked)).explain["time_window"] is None
    assert engram.context("u3", query="the fair", as_of="2023-05-08T00:00:00Z").contact["contact_id"] == "u3"
    with pytest.raises(ValidationError) as invalid:
        engram.context("u3", as_of="last spring")
    assert list(invalid.value.field_errors) == ["as_of"]


def test_errors_come_as_exceptions_by_kind(live_url, live_key, live_tenant):
    with Engram(live_url, api_key="eng_nothing_here") as stranger, pytest.raises(AuthenticationError):
        stranger.contacts.get("x")
    read_only = ApiKeyFactory(tenant=live_tenant, scopes=("read",)).plaintext
    with Engram(live_url, api_key=read_only) as reader, pytest.raises(PermissionDeniedError):
        reader.contacts.create("x")
    with Engram(live_url, api_key=live_key) as engram:
        with pytest.raises(NotFoundError):
            engram.context("nobody")
        with pytest.raises(ValidationError) as invalid:
            engram.search("dogs", top_k=500)
        assert list(invalid.value.field_errors) == ["top_k"]
        engram.contacts.create("twice")
        with pytest.raises(ConflictError):
            engram.contacts.create("twice")
    revoked = ApiKeyFactory(tenant=live_tenant)
    ApiKey.objects.filter(pk=revoked.pk).update(revoked_at="2026-01-01T00:00:00Z")
    with Engram(live_url, api_key=revoked.plaintext) as engram, pytest.raises(AuthenticationError):
        engram.contacts.get("twice")


def test_a_server_that_cannot_be_reached_is_a_connection_error_after_the_retries():
    started = time.monotonic()
    with Engram("http://127.0.0.1:9", api_key="eng_x_y", max_retries=2) as engram, pytest.raises(APIConnectionError):
        engram.contacts.get("x")
    assert time.monotonic() - started >= 0.5  # two backoffs (0.25-0.5 s, 0.5-1 s) before giving up


def test_the_async_client_gives_what_the_sync_one_gives(live_url, live_key):
    with Engram(live_url, api_key=live_key) as engram:
        engram.ingest("My sister Priya lives in Delhi", contact_id="u2", conversation_id="c", message_id="s-1")
        for number in range(4):
            engram.contacts.create(f"extra-{number}")
        sync_view = (
            engram.contacts.get("u2"),
            [contact.contact_id for contact in engram.contacts.list(page_size=2)],
            engram.search("where does Priya live?", contact_id="u2"),
            engram.context("u2", query="Priya", token_budget=300).context_text,
            [memory.id for memory in engram.memories.list(contact_id="u2", page_size=1)],
        )

    async def async_view():
        async with AsyncEngram(live_url, api_key=live_key) as engram:
            repeated = await engram.ingest(
                "My sister Priya lives in Delhi", contact_id="u2", conversation_id="c", message_id="s-1"
            )
            assert repeated.duplicate is True
            return (
                await engram.contacts.get("u2"),
                [contact.contact_id async for contact in engram.contacts.list(page_size=2)],
                await engram.search("where does Priya live?", contact_id="u2"),
                (await engram.context("u2", query="Priya", token_budget=300)).context_text,
                [memory.id async for memory in engram.memories.list(contact_id="u2", page_size=1)],
            )

    contact, contacts, found, context_text, memory_ids = asyncio.run(async_view())
    assert contact == sync_view[0] and contacts == sync_view[1] and context_text == sync_view[3]
    assert memory_ids == sync_view[4] and len(memory_ids) >= 2
    # the same hits; their order may differ: handing memories out (the sync view's search and context) records
    # their access, which the worker folds into the access-frequency signal between the two views
    assert {hit.id: hit.content for hit in found.results} == {hit.id: hit.content for hit in sync_view[2].results}
