"""A conversation id kept for a whole chat still has sessions: a turn after a silence longer than
ENGRAM_SESSION_GAP_SECONDS opens the next one, and the memories, the turn-before context and the deferred
consolidation follow them (apps/conversations/sessions.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.test import override_settings

from apps.conversations.models import Conversation
from apps.core.fields import MAX_ID_LENGTH
from apps.memories.ingest.services import IngestItem, ingest_messages
from apps.memories.lifecycle.deferred import conversation_consolidate, near_duplicates_merge
from apps.memories.models import ContextEvent, Memory, MemoryEntity
from tests.factories import ContactFactory, MemoryFactory

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(message_id, text, at, conversation="chat-ana"):
    return IngestItem(
        contact_id="ana", conversation_id=conversation, message=text, message_id=message_id, occurred_at=at
    )


def sessions_of(tenant, message_id):
    return set(
        Memory.objects.filter(tenant=tenant, source_message_ids__contains=[message_id]).values_list(
            "source_session_id", flat=True
        )
    )


def test_one_conversation_id_is_split_at_silences(tenant):
    ingest_messages(
        tenant=tenant,
        items=[
            turn("a1", "I started pottery classes at the community centre", T0),
            turn("a2", "My teacher says my bowls are getting better", T0 + timedelta(minutes=4)),
            turn("b1", "We booked a trip to Lisbon for April", T0 + timedelta(days=1)),
        ],
        actor="test",
    )
    ingest_messages(
        tenant=tenant,
        items=[
            turn("b2", "The flights to Lisbon were cheaper than I expected", T0 + timedelta(days=1, minutes=20)),
            turn("c1", "I adopted a kitten called Miso yesterday", T0 + timedelta(days=4)),
        ],
        actor="test",
    )
    assert sessions_of(tenant, "a1") == sessions_of(tenant, "a2") == {"chat-ana"}
    assert sessions_of(tenant, "b1") == sessions_of(tenant, "b2") == {"chat-ana/1"}  # across two requests
    assert sessions_of(tenant, "c1") == {"chat-ana/2"}
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat-ana")
    assert conversation.session_number == 2
    events = ContextEvent.objects.filter(conversation=conversation).select_related("message")
    assert {event.message.external_id: event.source_metadata["session_id"] for event in events} == {
        "a1": "chat-ana",
        "a2": "chat-ana",
        "b1": "chat-ana/1",
        "b2": "chat-ana/1",
        "c1": "chat-ana/2",
    }
    # a late delivery of an older turn joins the current session; none is renumbered
    ingest_messages(
        tenant=tenant, items=[turn("a3", "The glaze I chose was blue", T0 + timedelta(minutes=8))], actor="test"
    )
    assert sessions_of(tenant, "a3") == {"chat-ana/2"}
    assert sessions_of(tenant, "a1") == {"chat-ana"}


def test_a_conversation_per_visit_keeps_its_id_as_its_session(tenant):
    ingest_messages(
        tenant=tenant,
        items=[
            turn("v1", "I started pottery classes at the community centre", T0, conversation="visit-1"),
            turn("v2", "We booked a trip to Lisbon for April", T0 + timedelta(days=3), conversation="visit-2"),
        ],
        actor="test",
    )
    assert sessions_of(tenant, "v1") == {"visit-1"} and sessions_of(tenant, "v2") == {"visit-2"}
    assert set(Conversation.objects.filter(tenant=tenant).values_list("session_number", flat=True)) == {0}


def test_the_longest_conversation_id_keeps_its_sessions_apart(tenant):
    # `<id>/11` of an id as long as the API accepts is longer than the id: cut to the id's length, every
    # session after the first read as the first and the chat grouped as one session again
    longest = "c" * MAX_ID_LENGTH
    places = [
        "Lisbon",
        "Porto",
        "Seville",
        "Bilbao",
        "Lyon",
        "Turin",
        "Ghent",
        "Bergen",
        "Krakow",
        "Split",
        "Graz",
        "Cork",
    ]
    ingest_messages(
        tenant=tenant,
        items=[
            turn(f"l{n}", f"Today I visited the old harbour of {place}", T0 + timedelta(days=n), conversation=longest)
            for n, place in enumerate(places)
        ],
        actor="test",
    )
    assert sessions_of(tenant, "l0") == {longest}
    assert sessions_of(tenant, "l1") == {f"{longest}/1"}
    assert sessions_of(tenant, "l11") == {f"{longest}/11"}
    assert len({session for n in range(len(places)) for session in sessions_of(tenant, f"l{n}")}) == len(places)


def test_the_gap_is_a_setting(tenant):
    with override_settings(ENGRAM={**settings.ENGRAM, "SESSION_GAP_SECONDS": 3 * 24 * 3600}):
        ingest_messages(
            tenant=tenant,
            items=[
                turn("g1", "I started pottery classes at the community centre", T0),
                turn("g2", "We booked a trip to Lisbon for April", T0 + timedelta(days=2)),
            ],
            actor="test",
        )
    assert sessions_of(tenant, "g2") == {"chat-ana"}


def test_deferred_consolidation_covers_every_session_of_the_conversation(tenant):
    # the dog is introduced in the first session; the later session's turn names him without saying what he is
    ingest_messages(
        tenant=tenant,
        items=[
            turn("d1", "My dog Bruno loves the park", T0),
            turn("d2", "I love walking Bruno by the river", T0 + timedelta(days=2)),
        ],
        actor="test",
    )
    assert sessions_of(tenant, "d2") == {"chat-ana/1"}
    later = Memory.objects.filter(tenant=tenant, source_message_ids__contains=["d2"])
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat-ana")
    conversation_consolidate(conversation_id=str(conversation.pk))
    for memory in later:
        assert MemoryEntity.objects.filter(memory=memory, entity__entity_type="pet", entity__slug="bruno").exists()


def test_near_duplicates_of_a_conversation_are_merged_in_its_later_sessions_only(tenant):
    contact = ContactFactory(tenant=tenant, external_id="ana")

    def pair(session, *texts):
        return [
            MemoryFactory(
                tenant=tenant, contact=contact, memory_type="preference", content=text, source_session_id=session
            )
            for text in texts
        ]

    later = pair("chat-ana/3", "Likes spicy food", "Likes spicy food a lot")
    # another conversation whose id starts the same: not one of chat-ana's sessions
    other = pair("chat-anat/1", "Prefers tea over coffee", "Prefers tea over coffee in the morning")
    assert near_duplicates_merge(tenant=tenant, contact=contact, session_id="chat-ana") == 1
    assert Memory.objects.filter(pk__in=[m.pk for m in later], valid_to__isnull=False).count() == 1
    assert not Memory.objects.filter(pk__in=[m.pk for m in other], valid_to__isnull=False).exists()
    # the other pair is a near duplicate too: merged when the whole scope is consolidated
    assert near_duplicates_merge(tenant=tenant, contact=contact) == 1
