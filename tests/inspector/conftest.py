"""Fixtures for the inspector: tenant owners with a login, and contacts whose memories come from real ingest
(embeddings, entities, provenance, mood log), so pages show what production would show."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.contacts.models import Contact, ContactState
from apps.memories.ingest.services import IngestItem, ingest_messages
from apps.memories.models import Memory
from tests.factories import MembershipFactory, UserFactory

PASSWORD = "pw-for-tests"

ARJUN_MESSAGES = [
    "Hi, I'm Arjun. I work at Infosys in Chennai.",
    "My dog Bruno is a golden retriever, he is 3 years old.",
    "I don't like talking about politics.",
    "I love filter coffee in the morning.",
    "Feeling really anxious about my promotion review on Friday.",
    "Went trekking in Coorg with my sister Priya last weekend, it was amazing!",
    "I'm vegetarian.",
    "My birthday is on 12 March.",
    "Bored today, nothing to do.",
    "Actually I moved to Bangalore now.",
]


@dataclass
class Seeded:
    contact: Contact
    conversation_id: str

    def memory(self, content: str) -> Memory:
        return Memory.objects.get(tenant=self.contact.tenant, contact=self.contact, content=content)


def seed_contact(
    tenant,
    *,
    external_id: str = "arjun",
    display_name: str = "Arjun",
    texts: list[str] | None = None,
    days: int = 40,
    stage: str | None = "established",
    message_prefix: str = "",
) -> Seeded:
    """Ingest a conversation spread over `days` (one message every few days), then optionally set the
    relationship stage so GET /context has a memory budget."""
    texts = texts or ARJUN_MESSAGES
    now = timezone.now()
    step = days / max(len(texts), 1)
    conversation_id = f"{external_id}-chat"
    items = [
        IngestItem(
            contact_id=external_id,
            conversation_id=conversation_id,
            message=text,
            message_id=f"{message_prefix or external_id}-m{index}",
            display_name=display_name,
            channel="whatsapp",
            occurred_at=now - timedelta(days=days - step * index),
        )
        for index, text in enumerate(texts)
    ]
    ingest_messages(tenant=tenant, items=items, actor="test")
    contact = Contact.objects.get(tenant=tenant, external_id=external_id)
    if stage:
        ContactState.objects.filter(contact=contact).update(relationship_stage=stage)
    return Seeded(contact=contact, conversation_id=conversation_id)


def login(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def owner(tenant):
    return MembershipFactory(tenant=tenant, user=UserFactory(username="olivia")).user


@pytest.fixture
def owner_client(owner) -> Client:
    return login(owner)


@pytest.fixture
def other_owner(other_tenant):
    return MembershipFactory(tenant=other_tenant, user=UserFactory(username="mallory")).user


@pytest.fixture
def seeded(tenant) -> Seeded:
    return seed_contact(tenant)
